package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// schemaVersion is the ledger schema this build writes. A database at a
// newer version was written by a newer release and is refused.
const schemaVersion = 5

// migration brings the schema from version-1 to version, in the open
// transaction.
type migration struct {
	version int
	sqlite  func(ctx context.Context, tx *sql.Tx) error
	pg      []string
}

// replicaSchema adds the replica of each row and the heartbeats (version 2).
var replicaSchema = []string{
	`ALTER TABLE payments ADD COLUMN replica TEXT NOT NULL DEFAULT ''`,
	`CREATE TABLE replicas (id TEXT PRIMARY KEY, seen_at TEXT NOT NULL)`,
	`CREATE INDEX payments_replica ON payments (replica, status)`,
	`CREATE INDEX payments_created ON payments (created_at)`,
}

// sessionSchema adds the fleet's session registry (version 3): where each
// session lives, keyed by the hash of its id (registry.go).
var sessionSchema = []string{
	`CREATE TABLE sessions (
	id_hash TEXT PRIMARY KEY,
	replica TEXT NOT NULL,
	url TEXT NOT NULL,
	owner TEXT NOT NULL,
	environment TEXT NOT NULL,
	created_at TEXT NOT NULL,
	last_call_at TEXT NOT NULL DEFAULT '',
	expires_at TEXT NOT NULL,
	state TEXT NOT NULL CHECK (state IN ('open', 'ended')),
	why TEXT NOT NULL DEFAULT '',
	ended_at TEXT NOT NULL DEFAULT ''
)`,
	`CREATE INDEX sessions_state ON sessions (state, replica)`,
}

// channelSchema adds the payment channels (version 4, channels.go): the
// channel rows with their one pending increment, one row per counted
// increment, the claimer's lease and its transactions, and the channel a
// deposit's payments row funds. Amounts are canonical decimal TEXT (a
// uint128 does not fit an INTEGER); only Go adds them up. Counters and unix
// times are BIGINT: PostgreSQL's INTEGER ends in 2038.
var channelSchema = []string{
	`CREATE TABLE channels (
	channel_id TEXT PRIMARY KEY,
	network TEXT NOT NULL,
	payer TEXT NOT NULL,
	payer_authorizer TEXT NOT NULL,
	receiver TEXT NOT NULL,
	receiver_authorizer TEXT NOT NULL,
	token TEXT NOT NULL,
	withdraw_delay BIGINT NOT NULL,
	salt TEXT NOT NULL,
	state TEXT NOT NULL CHECK (state IN ('open', 'refunding', 'closed')),
	charged TEXT NOT NULL DEFAULT '0',
	voucher_max TEXT NOT NULL DEFAULT '0',
	voucher_sig TEXT NOT NULL DEFAULT '',
	balance TEXT NOT NULL DEFAULT '0',
	claimed TEXT NOT NULL DEFAULT '0',
	withdraw_amount TEXT NOT NULL DEFAULT '0',
	withdraw_at BIGINT NOT NULL DEFAULT 0,
	refund_nonce TEXT NOT NULL DEFAULT '0',
	synced_at TEXT NOT NULL DEFAULT '',
	pending_id TEXT NOT NULL DEFAULT '',
	pending_amount TEXT NOT NULL DEFAULT '',
	pending_max TEXT NOT NULL DEFAULT '',
	pending_sig TEXT NOT NULL DEFAULT '',
	pending_replica TEXT NOT NULL DEFAULT '',
	pending_until TEXT NOT NULL DEFAULT '',
	calls BIGINT NOT NULL DEFAULT 0,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	last_charged_at TEXT NOT NULL DEFAULT ''
)`,
	`CREATE INDEX channels_open ON channels (state, receiver, token)`,
	`CREATE INDEX channels_payer ON channels (payer)`,
	`CREATE INDEX channels_pending ON channels (pending_replica)`,
	`CREATE TABLE channel_charges (
	channel_id TEXT NOT NULL,
	charged_after TEXT NOT NULL,
	amount TEXT NOT NULL,
	voucher_max TEXT NOT NULL,
	resource TEXT NOT NULL,
	replica TEXT NOT NULL,
	created_at TEXT NOT NULL,
	PRIMARY KEY (channel_id, charged_after)
)`,
	`CREATE TABLE channel_ops (
	id TEXT PRIMARY KEY,
	kind TEXT NOT NULL CHECK (kind IN ('claim', 'sweep', 'refund')),
	replica TEXT NOT NULL,
	status TEXT NOT NULL CHECK (status IN ('sending', 'mined', 'failed', 'pending')),
	tx_hash TEXT NOT NULL DEFAULT '',
	channels BIGINT NOT NULL DEFAULT 0,
	amount TEXT NOT NULL DEFAULT '0',
	gas_used BIGINT NOT NULL DEFAULT 0,
	reason TEXT NOT NULL DEFAULT '',
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
)`,
	`CREATE INDEX channel_ops_created ON channel_ops (created_at)`,
	`CREATE TABLE channel_claimer (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	replica TEXT NOT NULL,
	since TEXT NOT NULL,
	requested_at TEXT NOT NULL DEFAULT '',
	last_pass_at TEXT NOT NULL DEFAULT ''
)`,
	`ALTER TABLE payments ADD COLUMN channel_id TEXT NOT NULL DEFAULT ''`,
}

// migrations lists every schema step, in order.
var migrations = []migration{
	{version: 1, sqlite: sqliteSettling, pg: []string{
		strings.Replace(fmt.Sprintf(ledgerTable, "payments"), ") WITHOUT ROWID;", ");", 1),
		ledgerIndex,
	}},
	{version: 2, sqlite: execAll(replicaSchema), pg: replicaSchema},
	{version: 3, sqlite: execAll(sessionSchema), pg: sessionSchema},
	{version: 4, sqlite: execAll(channelSchema), pg: channelSchema},
	{version: 5, sqlite: execAll(answersSchema("BLOB")), pg: answersSchema("BYTEA")},
}

// migrate brings the database to schemaVersion in one transaction, or
// refuses a newer one. Concurrent starts are serialized: SQLite's
// immediate transaction, PostgreSQL's advisory lock.
func migrate(ctx context.Context, db *sql.DB, d dialect) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if d.dollar {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7243110)`); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	var have sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_version`).Scan(&have); err != nil {
		return err
	}
	if int(have.Int64) > schemaVersion {
		return fmt.Errorf("the ledger's schema is version %d, newer than the version %d this sandboxd knows: "+
			"a newer release wrote it; run that release or a later one on this ledger, never an older one",
			have.Int64, schemaVersion)
	}
	for _, m := range migrations {
		if m.version <= int(have.Int64) {
			continue
		}
		if d.dollar {
			err = execAll(m.pg)(ctx, tx)
		} else {
			err = m.sqlite(ctx, tx)
		}
		if err != nil {
			return fmt.Errorf("schema version %d: %w", m.version, err)
		}
	}
	if int(have.Int64) < schemaVersion {
		if _, err := tx.ExecContext(ctx, `DELETE FROM schema_version`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, d.bind(`INSERT INTO schema_version (version) VALUES (?)`), schemaVersion); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// execAll returns a step that runs each statement.
func execAll(stmts []string) func(context.Context, *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		for _, q := range stmts {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", strings.Fields(q)[:3], err)
			}
		}
		return nil
	}
}

// sqliteSettling (version 1) creates the payments table, or brings a ledger
// made before the settling state to it. SQLite cannot change a CHECK
// constraint in place, so the table is copied into a new one.
//
// The old code wrote no settling state: one of its reserved rows may have
// had its settlement sent when the service stopped. Such rows become
// settling, so Recover treats them as possibly collected and never admits
// them again unless the chain says they were not.
func sqliteSettling(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(ledgerTable, "payments")); err != nil {
		return err
	}
	var schema string
	err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'payments'`).Scan(&schema)
	if err != nil {
		return err
	}
	if !strings.Contains(schema, "'settling'") {
		steps := []string{
			fmt.Sprintf(ledgerTable, "payments_new"),
			`INSERT INTO payments_new (payer, nonce, created_at, updated_at, amount, network, asset,
	status, tx_hash, run_status, reason)
SELECT payer, nonce, created_at, updated_at, amount, network, asset,
	CASE status WHEN 'reserved' THEN 'settling' ELSE status END, tx_hash, run_status, reason
FROM payments`,
			`DROP TABLE payments`,
			`ALTER TABLE payments_new RENAME TO payments`,
		}
		for _, step := range steps {
			if _, err := tx.ExecContext(ctx, step); err != nil {
				return fmt.Errorf("adding the settling state: %w", err)
			}
		}
	}
	_, err = tx.ExecContext(ctx, ledgerIndex)
	return err
}
