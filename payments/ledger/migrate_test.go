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
	if err := l.MarkSettling(ctx, e.Payer, e.Nonce); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, l, e, StatusSettling)
}
