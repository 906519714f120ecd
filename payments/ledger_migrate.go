package payments

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// migrate creates the payments table, or brings a ledger made before the
// settling state to the current schema. SQLite cannot change a CHECK
// constraint in place, so the table is copied into a new one, in one
// transaction.
//
// The old code wrote no settling state: one of its reserved rows may have
// had its settlement sent when the service stopped. Such rows become
// settling, so Recover treats them as possibly collected and never admits
// them again unless the chain says they were not.
func migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil) // _txlock=immediate: one process migrates
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(ledgerTable, "payments")); err != nil {
		return err
	}
	var schema string
	err = tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'payments'`).Scan(&schema)
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
	if _, err := tx.ExecContext(ctx, ledgerIndex); err != nil {
		return err
	}
	return tx.Commit()
}
