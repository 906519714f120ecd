package ledger

import (
	"context"
	"database/sql"
	"errors"

	"sandboxd"
)

// holdAnswered is ReserveIncrement of a hold with an answer: the answer's
// dead rows' delete, the compare-and-set q (with args) and the answers
// row, in tx (ReserveIncrement's). The row's payer is the channel's.
func (l *SQL) holdAnswered(ctx context.Context, tx *sql.Tx, id string, h Hold, q string, args []any) error {
	var payer string
	err := l.stmts.in(tx).QueryRowContext(ctx, l.channelPayerSQL(), key(id)).Scan(&payer)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrChannelMoved
	}
	if err != nil {
		return err
	}
	res, err := l.stmts.in(tx).ExecContext(ctx, q, args...)
	if err := affected(res, err, ErrChannelMoved); err != nil {
		return err
	}
	return l.claimAnswer(ctx, tx, payer, VoucherKey(id, h.Max), h.Answer)
}

// commitAnswer is CommitIncrement's answers step, in its transaction: the
// hold's running row of (payer, paymentKey) becomes ready with ans's bytes
// and the report of the committed row c. A row gone (swept after this
// replica's lease ran out) keeps nothing and fails nothing: the charge
// stands.
func (l *SQL) commitAnswer(ctx context.Context, tx *sql.Tx, payer, paymentKey string, c Channel, ans *AnswerCommit) error {
	report, err := ans.Report(c)
	if err != nil {
		return sandboxd.Wrap(sandboxd.CodeInternal, "payments.ledger.channel_commit", err,
			"cannot build the settlement report of the answer")
	}
	args := append(bodyArgs(ans.Body), string(report), l.stamp(), payer, paymentKey)
	_, err = l.stmts.in(tx).ExecContext(ctx, l.commitAnswerSQL(), args...)
	return err
}

// commitAnswerSQL is commitAnswer's statement.
func (l *SQL) commitAnswerSQL() string {
	return l.dialect.bind(`UPDATE answers SET state = 'ready', ` + bodySet + `,
	settlement = ?, expires_at = ` + l.readyIn() + `, updated_at = ?
WHERE payer = ? AND payment_key = ? AND state = 'running'`)
}

// channelPayerSQL reads a channel's payer, the owner of its answers rows.
func (l *SQL) channelPayerSQL() string {
	return l.dialect.bind(`SELECT payer FROM channels WHERE channel_id = ?`)
}

// dropHoldAnswers deletes, in tx, the running answers rows of the holds of
// the channels that match where (with args): a released hold bought
// nothing, so its key and id are free again.
func (l *SQL) dropHoldAnswers(ctx context.Context, tx *sql.Tx, where string, args ...any) error {
	_, err := tx.ExecContext(ctx, l.dialect.bind(`DELETE FROM answers WHERE state = 'running'
	AND (payer, payment_key) IN (SELECT payer, channel_id || '/' || pending_max FROM channels WHERE `+where+`)`),
		args...)
	return err
}
