package ledger

import (
	"context"
	"database/sql"
)

// sweepBatch bounds the rows one delete of SweepAnswers removes, so a
// long-idle ledger's backlog never holds the write lock for long.
const sweepBatch = 500

// budgetLock is the key of the transaction advisory lock a budget pass
// holds on PostgreSQL: one pass in the fleet at a time. (A one-key lock:
// apart from the replica ids' two-key locks of the same first number.)
const budgetLock = 7243111

// SweepAnswers deletes the rows that are no longer live (expired, or
// running under a replica whose lease ran out), sweepBatch at a time;
// then, while the bytes kept exceed maxBytes, drops the bytes of the
// oldest rows of the payer holding the most bytes, again and again, until
// they are at most 90 % of maxBytes. An evicted row keeps its settlement
// (dropped = DroppedEvicted): its retry is told the answer was not kept,
// never run again. Every replica may call it; on PostgreSQL the budget
// pass takes an advisory lock, so the fleet evicts one pass at a time.
func (l *SQL) SweepAnswers(ctx context.Context, maxBytes int64) (SweepReport, error) {
	const op = "payments.ledger.answer_sweep"
	if err := l.checkWrite(); err != nil {
		return SweepReport{}, ledgerError(op, err)
	}
	defer l.timed("answer_sweep")()
	var rep SweepReport
	for {
		n, err := l.sweepDead(ctx)
		if err != nil {
			return rep, ledgerError(op, err)
		}
		rep.Expired += n
		if n < sweepBatch {
			break
		}
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	if err := l.inTx(ctx, func(tx *sql.Tx) error { return l.evict(ctx, tx, maxBytes, &rep) }); err != nil {
		return rep, ledgerError(op, err)
	}
	return rep, nil
}

// sweepDead deletes up to sweepBatch rows that are no longer live.
func (l *SQL) sweepDead(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	res, err := l.db.ExecContext(ctx, l.dialect.bind(`DELETE FROM answers WHERE (payer, payment_key) IN
	(SELECT payer, payment_key FROM answers WHERE NOT `+l.liveAnswer()+` LIMIT ?)`), l.lease.Seconds(), sweepBatch)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// evict is SweepAnswers's budget pass, in tx; rep gets what it did and
// the bytes kept after it.
func (l *SQL) evict(ctx context.Context, tx *sql.Tx, maxBytes int64, rep *SweepReport) error {
	if l.dialect.dollar {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, budgetLock); err != nil {
			return err
		}
	}
	var sum int64
	if err := tx.QueryRowContext(ctx, `SELECT CAST(COALESCE(SUM(body_bytes), 0) AS BIGINT) FROM answers`).Scan(&sum); err != nil {
		return err
	}
	if sum > maxBytes {
		target := maxBytes - maxBytes/10
		for sum > target {
			n, err := l.evictTop(ctx, tx, sum-target, rep)
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			sum -= n
		}
	}
	rep.Bytes = sum
	return nil
}

// evictTop drops the bytes of the oldest rows of the payer holding the
// most, until over bytes were dropped or that payer holds fewer than the
// next one; it returns the bytes dropped (0: nothing left to drop).
func (l *SQL) evictTop(ctx context.Context, tx *sql.Tx, over int64, rep *SweepReport) (int64, error) {
	top, next, err := l.topPayers(ctx, tx)
	if err != nil || top.payer == "" {
		return 0, err
	}
	rows, err := tx.QueryContext(ctx, l.dialect.bind(`SELECT payment_key, body_bytes FROM answers
WHERE payer = ? AND body_bytes > 0 ORDER BY created_at, payment_key LIMIT 100`), top.payer)
	if err != nil {
		return 0, err
	}
	var keys []string
	var dropped int64
	for dropped < over && top.bytes-dropped >= next.bytes && rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			rows.Close()
			return 0, err
		}
		keys, dropped = append(keys, k), dropped+n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	now := l.stamp()
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, l.dialect.bind(`UPDATE answers SET body = NULL, body_bytes = 0,
	dropped = 'evicted', updated_at = ? WHERE payer = ? AND payment_key = ?`), now, top.payer, k); err != nil {
			return 0, err
		}
	}
	rep.Evicted += int64(len(keys))
	rep.EvictedBytes += dropped
	return dropped, nil
}

// payerBytes is a payer and the bytes its rows keep.
type payerBytes struct {
	payer string
	bytes int64
}

// topPayers returns the two payers keeping the most bytes (zero values
// when there are fewer).
func (l *SQL) topPayers(ctx context.Context, tx *sql.Tx) (top, next payerBytes, err error) {
	rows, err := tx.QueryContext(ctx, `SELECT payer, CAST(SUM(body_bytes) AS BIGINT) AS kept FROM answers
WHERE body_bytes > 0 GROUP BY payer ORDER BY kept DESC, payer LIMIT 2`)
	if err != nil {
		return top, next, err
	}
	defer rows.Close()
	var got []payerBytes
	for rows.Next() {
		var p payerBytes
		if err := rows.Scan(&p.payer, &p.bytes); err != nil {
			return top, next, err
		}
		got = append(got, p)
	}
	if len(got) > 0 {
		top = got[0]
	}
	if len(got) > 1 {
		next = got[1]
	}
	return top, next, rows.Err()
}
