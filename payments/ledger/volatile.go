package ledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
)

// volatileTx runs fn in a transaction whose loss in a crash of the
// machine costs nothing (a channel's hold, its running answers row, their
// release: the next start clears holds anyway, and no answer leaves
// before the commit that follows them), without waiting for the disk.
// Every durable commit after it carries it to disk too, so the order of
// writes is kept; only the wait is saved: on this host an fsync is about
// 1 ms, a voucher's budget 10.
//
// SQLite: the transaction commits with synchronous=NORMAL, which in WAL
// mode never corrupts the file (checkpoints still sync), then the
// connection is put back to FULL; a connection that cannot be put back is
// discarded, so no payment is ever written on it. Statements fn runs
// through stmts must be warmed first (the transaction holds the
// connection). PostgreSQL: an ordinary transaction (one with
// synchronous_commit off measured slower over loopback, its round trips
// costing more than the flush it saves).
func (l *SQL) volatileTx(ctx context.Context, fn func(*sql.Tx) error) error {
	if l.dialect.name != dialectSQLite.name {
		return l.inTx(ctx, fn)
	}
	c, err := l.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "PRAGMA synchronous = NORMAL"); err != nil {
		return discard(c, err)
	}
	err = inTxOn(ctx, c, fn)
	if _, rerr := c.ExecContext(context.WithoutCancel(ctx), "PRAGMA synchronous = FULL"); rerr != nil {
		return discard(c, rerr)
	}
	return err
}

// discard closes c's connection rather than returning it to the pool (its
// settings are unknown after err) and returns err.
func discard(c *sql.Conn, err error) error {
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	return errors.Join(err, errDiscarded)
}

// errDiscarded marks an error after which the connection was dropped.
var errDiscarded = errors.New("the ledger's connection was reset")
