package payments

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

// OpenPostgres opens the ledger in the PostgreSQL database of url (a
// postgres:// URL; PostgreSQL 15 or newer) and migrates it, as replica
// DefaultReplica with DefaultLease. Uniqueness of a payment is the table's
// primary key, so every replica sharing the database admits a payment at
// most once. Errors are CodeUnavailable and never show the password.
func OpenPostgres(ctx context.Context, url string) (*SQLLedger, error) {
	const op = "payments.ledger.open"
	where := RedactLedger(url)
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
