package ledger

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// wantStatus checks that e's row is in status and returns it.
func wantStatus(tb testing.TB, l *SQL, e Entry, status string) Entry {
	tb.Helper()
	got, err := l.Get(context.Background(), e.Payer, e.Nonce)
	if err != nil || got.Status != status {
		tb.Fatalf("row %s/%s = %+v, %v; want %s", e.Payer, e.Nonce, got, err, status)
	}
	return got
}

// TestLedgerMigratesSettling opens a ledger made before the settling state:
// its reserved rows (possibly mid-settlement under the old code) become
// settling, the rest is kept, and the new state can be written.
func TestLedgerMigratesSettling(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(ledgerTable, "'settling', ", "", 1)
	if old == ledgerTable {
		t.Fatal("the schema no longer lists 'settling', ")
	}
	stmts := []string{
		strings.Replace(old, "%s", "payments", 1),
		`INSERT INTO payments (payer, nonce, created_at, updated_at, amount, network, asset, status, tx_hash)
VALUES ('0xa', '0x1', 't', 't', '5000', 'n', 'a', 'reserved', ''), ('0xa', '0x2', 't', 't', '5000', 'n', 'a', 'settled', '0xtx')`,
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO payments (payer, nonce, created_at, updated_at, amount, network, asset, status)
VALUES ('0xa', '0x3', 't', 't', '5000', 'n', 'a', 'settling')`); err == nil {
		t.Fatal("the old schema accepted 'settling'")
	}
	db.Close()

	for range 2 { // the second open finds nothing to do
		l, err := OpenFile(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if got := wantStatus(t, l, Entry{Payer: "0xa", Nonce: "0x1"}, StatusSettling); got.Amount != "5000" {
			t.Fatalf("row %+v", got)
		}
		if got := wantStatus(t, l, Entry{Payer: "0xa", Nonce: "0x2"}, StatusSettled); got.TxHash != "0xtx" {
			t.Fatalf("row %+v", got)
		}
		l.Close()
	}
	l, err := OpenFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e := Entry{Payer: "0xb", Nonce: "0x5", Amount: "5000", Network: "n", Asset: "a"}
	if err := l.Reserve(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := l.MarkSettling(ctx, e.Payer, e.Nonce, nil); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, l, e, StatusSettling)
}

// TestLedgerMigratesToChannels opens a version 3 ledger (before channels):
// its payments, replicas and sessions are kept, its payments belong to no
// channel, and the channel tables are there to write.
func TestLedgerMigratesToChannels(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations[:3] {
		if err := m.sqlite(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`CREATE TABLE schema_version (version INTEGER NOT NULL)`,
		`INSERT INTO schema_version (version) VALUES (3)`,
		`INSERT INTO payments (payer, nonce, created_at, updated_at, amount, network, asset, status, tx_hash, replica)
VALUES ('0xa', '0x1', 't', 't', '5000', 'n', 'a', 'settled', '0xtx', 'r1')`,
		`INSERT INTO replicas (id, seen_at) VALUES ('r1', 't')`,
		`INSERT INTO sessions (id_hash, replica, url, owner, environment, created_at, expires_at, state)
VALUES ('h', 'r1', 'http://r1', '0xa', 'python', 't', 't', 'open')`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	l, err := OpenFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := wantStatus(t, l, Entry{Payer: "0xa", Nonce: "0x1"}, StatusSettled)
	if got.TxHash != "0xtx" || got.Replica != "r1" || got.Amount != "5000" || got.ChannelID != "" {
		t.Fatalf("row after the migration %+v", got)
	}
	var version, sessions int
	if err := l.db.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&version); err != nil || version != schemaVersion {
		t.Fatalf("schema version %d, %v; want %d", version, err, schemaVersion)
	}
	if err := l.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions WHERE replica = 'r1'`).Scan(&sessions); err != nil || sessions != 1 {
		t.Fatalf("%d sessions, %v", sessions, err)
	}
	id := "0x" + strings.Repeat("ab", 32)
	if c, err := l.AdoptChannel(ctx, Channel{ID: id, Network: "n"}); err != nil || c.ID != id || c.State != ChannelOpen {
		t.Fatalf("adopting after the migration: %+v, %v", c, err)
	}
	e := Entry{Payer: "0xb", Nonce: "0x2", Amount: "1", Network: "n", Asset: "a", ChannelID: id}
	if err := l.Reserve(ctx, e); err != nil {
		t.Fatal(err)
	}
	if got := wantStatus(t, l, e, StatusReserved); got.ChannelID != id {
		t.Fatalf("deposit row %+v", got)
	}
}
