package ledger

import (
	"context"
	"database/sql"
	"strings"

	"sandboxd"
)

// stmt is a statement and its arguments, run after another in its
// transaction.
type stmt struct {
	q    string
	args []any
}

// liveAnswer is the condition that an answers row is live: not expired,
// and not running under a replica whose lease ran out (by the database's
// clock, the predicate holdFree uses). Its one argument is the lease in
// seconds.
func (l *SQL) liveAnswer() string {
	return `(expires_at > ` + l.dialect.dbNow + ` AND (state <> 'running'
	OR replica IN (SELECT id FROM replicas WHERE seen_at >= ` + l.dialect.dbAgo + `)))`
}

// readyIn is the SQL of a row's expiry once ready: its keep from now, on
// the database's clock.
func (l *SQL) readyIn() string {
	return strings.Replace(l.dialect.dbIn, "?", "CAST(keep_ms AS DOUBLE PRECISION) / 1000", 1)
}

// checkAnswer refuses an AnswerRow the ledger would not store.
func checkAnswer(op string, a *AnswerRow) error {
	kinds := map[string]bool{"run": true, "session_open": true, "session_call": true}
	if a.Request == "" || !kinds[a.Kind] || (a.Transport != "http" && a.Transport != "mcp") ||
		a.X402Version < 1 || a.Keep <= 0 || a.Flow < 0 {
		return sandboxd.Errorf(sandboxd.CodeInternal, op, "an answer needs a request hash, a kind (run, "+
			"session_open, session_call), a transport (http, mcp), an x402 version and a keep; got %+v", *a)
	}
	return nil
}

// claimAnswer inserts a's row, running, for (payer, paymentKey) in tx:
// first it deletes the rows of that key or id that are no longer live (an
// expired row, or a running one of a replica whose lease is out, gives its
// key and id back before the sweeper comes), then inserts.
// ErrAnswerTaken when a live row holds the key or the id.
func (l *SQL) claimAnswer(ctx context.Context, tx *sql.Tx, payer, paymentKey string, a *AnswerRow) error {
	del, ins := l.claimSQL()
	p := l.stmts.in(tx)
	_, err := p.ExecContext(ctx, del, payer, paymentKey, a.ID, l.lease.Seconds())
	if err != nil {
		return err
	}
	now := l.stamp()
	res, err := p.ExecContext(ctx, ins, payer, paymentKey, a.ID, key(a.Request), a.Kind, a.Transport, a.X402Version,
		l.replica, a.Keep.Milliseconds(), now, now, (a.Flow + a.Keep).Seconds())
	return affected(res, err, ErrAnswerTaken)
}

// claimSQL is claimAnswer's two statements: the dead rows' delete and the
// insert. Without a conflict target, the insert's DO NOTHING covers the
// key and the unique (payer, payment_id) index alike.
func (l *SQL) claimSQL() (del, ins string) {
	d := l.dialect
	return d.bind(`DELETE FROM answers WHERE payer = ?
	AND (payment_key = ? OR (payment_id = ? AND payment_id <> '')) AND NOT ` + l.liveAnswer()),
		d.bind(`INSERT INTO answers (payer, payment_key, payment_id, request, kind,
	transport, state, x402_version, replica, keep_ms, created_at, updated_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ` + d.dbIn + `) ON CONFLICT DO NOTHING`)
}

// reserveAnswered is Reserve of an entry with an answer: the dead rows'
// delete, the payments row and the answers row, in one transaction.
func (l *SQL) reserveAnswered(ctx context.Context, e Entry, reserve string, args []any) error {
	return l.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, reserve, args...)
		if err := affected(res, err, ErrAlreadyUsed); err != nil {
			return err
		}
		return l.claimAnswer(ctx, tx, key(e.Payer), key(e.Nonce), e.Answer)
	})
}

// bodySet is the SET clause of an answer's bytes; bodyArgs its arguments.
const bodySet = `status = ?, body = ?, body_bytes = ?, answer_bytes = ?, dropped = ?`

// bodyArgs are bodySet's arguments for b: the bytes only when kept (else
// NULL and 0 bytes kept), and the answer's size either way.
func bodyArgs(b *Body) []any {
	var kept any
	if b.Dropped == "" && b.Bytes != nil {
		kept = b.Bytes
	}
	n := int64(len(b.Bytes))
	if kept == nil {
		n = 0
	}
	return []any{b.Status, kept, n, max(b.Size, int64(len(b.Bytes))), b.Dropped}
}

// heldAnswer is MarkSettling's answers step: the running row of
// (payer, nonce) becomes held with b's bytes. Without b (nil) there is no
// step, and a row stays running.
func (l *SQL) heldAnswer(payer, nonce string, b *Body) *stmt {
	if b == nil {
		return nil
	}
	args := append(bodyArgs(b), l.stamp(), key(payer), key(nonce))
	return &stmt{`UPDATE answers SET state = 'held', ` + bodySet + `, updated_at = ?
WHERE payer = ? AND payment_key = ? AND state = 'running'`, args}
}

// readyAnswer is MarkSettled's answers step: a held or pending row becomes
// ready with report ("" when nil: built from the payments row), for its
// keep from now.
func (l *SQL) readyAnswer(payer, nonce string, report []byte) *stmt {
	return &stmt{`UPDATE answers SET state = 'ready', settlement = ?, expires_at = ` + l.readyIn() + `,
	updated_at = ? WHERE payer = ? AND payment_key = ? AND state IN ('held', 'pending')`,
		[]any{string(report), l.stamp(), key(payer), key(nonce)}}
}

// pendingAnswer is MarkPending's answers step: a held or pending row
// becomes pending with report (nil keeps the one it has).
func (l *SQL) pendingAnswer(payer, nonce string, report []byte) *stmt {
	return &stmt{`UPDATE answers SET state = 'pending', settlement = COALESCE(NULLIF(?, ''), settlement),
	updated_at = ? WHERE payer = ? AND payment_key = ? AND state IN ('held', 'pending')`,
		[]any{string(report), l.stamp(), key(payer), key(nonce)}}
}

// dropAnswer is MarkFailed's and MarkReleased's answers step: nothing was
// paid, so the row goes and its key and id are free again.
func dropAnswer(payer, nonce string) *stmt {
	return &stmt{`DELETE FROM answers WHERE payer = ? AND payment_key = ?`, []any{key(payer), key(nonce)}}
}
