package ledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
)

// execVolatile runs one write whose loss in a crash of the machine costs
// nothing (a channel's hold: the next start clears holds anyway, and no
// answer leaves before the commit that follows it), without waiting for
// the disk. Every durable write after it carries it to disk too, so the
// order of writes is kept; only the wait is saved: on this host an fsync
// is about 1 ms, a voucher's budget 10.
//
// SQLite: the statement runs with synchronous=NORMAL, which in WAL mode
// never corrupts the file (checkpoints still sync), then the connection is
// put back to FULL; a connection that cannot be put back is discarded, so
// no payment is ever written on it. PostgreSQL: an ordinary write (a
// transaction with synchronous_commit off measured slower over loopback,
// its three more round trips costing more than the flush it saves).
func (l *SQL) execVolatile(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if l.dialect.name != dialectSQLite.name {
		return l.stmts.in(nil).ExecContext(ctx, query, args...)
	}
	l.stmts.warm(ctx, query)
	c, err := l.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "PRAGMA synchronous = NORMAL"); err != nil {
		return nil, discard(c, err)
	}
	res, err := inConnTx(ctx, c, func(tx *sql.Tx) (sql.Result, error) {
		return l.stmts.in(tx).ExecContext(ctx, query, args...)
	})
	if _, rerr := c.ExecContext(context.WithoutCancel(ctx), "PRAGMA synchronous = FULL"); rerr != nil {
		return nil, discard(c, rerr)
	}
	return res, err
}

// inConnTx runs fn in a transaction on c, committed when fn succeeds: a
// transaction, so that fn can run statements prepared on the database.
func inConnTx(ctx context.Context, c *sql.Conn, fn func(*sql.Tx) (sql.Result, error)) (sql.Result, error) {
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	res, err := fn(tx)
	if err != nil {
		return nil, err
	}
	return res, tx.Commit()
}

// discard closes c's connection rather than returning it to the pool (its
// settings are unknown after err) and returns err.
func discard(c *sql.Conn, err error) error {
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	return errors.Join(err, errDiscarded)
}

// errDiscarded marks an error after which the connection was dropped.
var errDiscarded = errors.New("the ledger's connection was reset")
