package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// answerColumns are the columns scanAnswer reads, in its order: every
// column but the bytes.
const answerColumns = `payer, payment_key, payment_id, request, kind, transport, state, x402_version, replica,
	status, body_bytes, answer_bytes, dropped, settlement, created_at, updated_at, expires_at`

// scanAnswer reads answerColumns, then into extra.
func scanAnswer(s interface{ Scan(...any) error }, extra ...any) (AnswerMeta, error) {
	var m AnswerMeta
	var settlement, created, updated, expires string
	dest := append([]any{&m.Payer, &m.Key, &m.ID, &m.Request, &m.Kind, &m.Transport, &m.State, &m.X402Version,
		&m.Replica, &m.Status, &m.BodyBytes, &m.AnswerBytes, &m.Dropped, &settlement, &created, &updated,
		&expires}, extra...)
	if err := s.Scan(dest...); err != nil {
		return AnswerMeta{}, err
	}
	if settlement != "" {
		m.Settlement = []byte(settlement)
	}
	m.Created, m.Updated, m.Expires = parseStamp(created), parseStamp(updated), parseStamp(expires)
	return m, nil
}

// LookupAnswer reads, in one statement, the live answers rows of (payer,
// paymentKey) and of (payer, id) (an empty id matches none), without their
// bytes, and the status of the payments row of (payer, paymentKey): what a
// payment's retry is decided on. A row is live when it has not expired and
// is not running under a replica whose lease ran out.
func (l *SQL) LookupAnswer(ctx context.Context, payer, paymentKey, id string) (AnswerLookup, error) {
	const op = "payments.ledger.answer_lookup"
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	payer, paymentKey = key(payer), key(paymentKey)
	rows, err := l.db.QueryContext(ctx, l.dialect.bind(`SELECT `+answerColumns+`, 'answer' FROM answers
WHERE payer = ? AND (payment_key = ? OR (payment_id = ? AND payment_id <> '')) AND `+l.liveAnswer()+`
UNION ALL
SELECT payer, nonce, '', '', '', '', status, 0, replica, 0, 0, 0, '', '', created_at, updated_at, '', 'payment'
FROM payments WHERE payer = ? AND nonce = ?`), payer, paymentKey, id, l.lease.Seconds(), payer, paymentKey)
	if err != nil {
		return AnswerLookup{}, ledgerError(op, err)
	}
	defer rows.Close()
	var out AnswerLookup
	for rows.Next() {
		var source string
		m, err := scanAnswer(rows, &source)
		if err != nil {
			return AnswerLookup{}, ledgerError(op, err)
		}
		switch {
		case source == "payment":
			out.Payment = m.State
			continue
		case m.Key == paymentKey:
			out.ByKey = &m
		}
		if id != "" && m.ID == id {
			out.ByID = &m
		}
	}
	if err := rows.Err(); err != nil {
		return AnswerLookup{}, ledgerError(op, err)
	}
	return out, nil
}

// AnswerState returns the live answers row of (payer, paymentKey) without
// its bytes (a retry's poll), or ErrNoAnswer.
func (l *SQL) AnswerState(ctx context.Context, payer, paymentKey string) (AnswerMeta, error) {
	m, _, err := l.answer(ctx, "payments.ledger.answer_state", payer, paymentKey, false)
	return m, err
}

// AnswerBody returns the live answers row of (payer, paymentKey) with its
// bytes (nil when not kept: AnswerMeta.Dropped says why), or ErrNoAnswer:
// one read per replay.
func (l *SQL) AnswerBody(ctx context.Context, payer, paymentKey string) (AnswerMeta, []byte, error) {
	return l.answer(ctx, "payments.ledger.answer_body", payer, paymentKey, true)
}

// answer reads the live row of (payer, paymentKey), with its bytes when
// body is set.
func (l *SQL) answer(ctx context.Context, op, payer, paymentKey string, body bool) (AnswerMeta, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	cols := answerColumns
	var b []byte
	var extra []any
	if body {
		cols += ", body"
		extra = append(extra, &b)
	}
	m, err := scanAnswer(l.db.QueryRowContext(ctx, l.dialect.bind(`SELECT `+cols+` FROM answers
WHERE payer = ? AND payment_key = ? AND `+l.liveAnswer()), key(payer), key(paymentKey), l.lease.Seconds()), extra...)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return AnswerMeta{}, nil, fmt.Errorf("%s: payer %s key %s: %w", op, key(payer), key(paymentKey), ErrNoAnswer)
	case err != nil:
		return AnswerMeta{}, nil, ledgerError(op, err)
	}
	return m, b, nil
}
