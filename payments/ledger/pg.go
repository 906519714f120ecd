package ledger

import (
	"context"
	"database/sql"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"sandboxd"
)

// pgMaxConns caps the connections one replica opens to PostgreSQL: enough
// for its sandboxes' reservations and settlements at once, few enough for
// a fleet to stay under the server's max_connections.
const pgMaxConns = 20

// replicaLockSpace is the first key of the advisory locks on replica ids.
const replicaLockSpace = 7243111

// holdReplicaID makes sure no other running process uses this replica id,
// on PostgreSQL: it takes a session advisory lock on the id, held on a
// connection of its own until Close. A process that dies drops its
// connection and with it the lock, so a restart takes it again at once;
// a second live process with the same id is refused. (SQLite ledgers
// belong to one process anyway.)
func (l *SQL) holdReplicaID(ctx context.Context) error {
	const op = "payments.ledger.open"
	if !l.dialect.dollar {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return ledgerError(op, err)
	}
	var got bool
	err = conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1, hashtext($2))`, replicaLockSpace, l.replica).Scan(&got)
	if err != nil {
		conn.Close()
		return ledgerError(op, err)
	}
	if !got {
		conn.Close()
		return sandboxd.Errorf(sandboxd.CodeUnavailable, op, "payments.replica_id %q is in use by another running "+
			"replica on this ledger; give each process its own id (the default is <hostname>/<runtime.instance>)", l.replica)
	}
	l.idLock = conn
	return nil
}

// releaseReplicaID gives up the replica id's advisory lock at once, so
// the next process with this id (a restart) can take it: closing the
// connection alone drops the lock only when the server's backend has
// ended, which may be after that process asks.
func (l *SQL) releaseReplicaID() {
	if l.idLock == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ledgerOpTimeout)
	defer cancel()
	_, _ = l.idLock.ExecContext(ctx, `SELECT pg_advisory_unlock($1, hashtext($2))`, replicaLockSpace, l.replica)
	l.idLock.Close()
}

// openPostgres opens the ledger in the PostgreSQL database of url (a
// postgres:// URL; PostgreSQL 15 or newer) and migrates it, as replica
// DefaultReplica with DefaultLease. Uniqueness of a payment is the table's
// primary key, so every replica sharing the database admits a payment at
// most once. Errors are CodeUnavailable and never show the password.
func openPostgres(ctx context.Context, url string) (*SQL, error) {
	const op = "payments.ledger.open"
	where := Redact(url)
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "cannot open the ledger "+where)
	}
	db.SetMaxOpenConns(pgMaxConns)
	db.SetMaxIdleConns(pgMaxConns)
	pctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "cannot reach the ledger "+where)
	}
	if err := migrate(pctx, db, dialectPostgres); err != nil {
		db.Close()
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "cannot prepare the ledger "+where)
	}
	l := newSQLLedger(db, dialectPostgres)
	l.location = url
	return l, nil
}
