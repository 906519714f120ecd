package ledger

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// execVolatile runs one statement in l.volatileTx.
func execVolatile(l *SQL, query string, args ...any) error {
	return l.volatileTx(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(query, args...)
		return err
	})
}

// synchronous reads the SQLite connection's synchronous setting (2 = FULL).
func synchronous(t *testing.T, l *SQL) int {
	t.Helper()
	var n int
	if err := l.db.QueryRowContext(context.Background(), "PRAGMA synchronous").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestVolatileWritesLeaveTheLedgerSynced checks that a volatile write,
// applied or failed, leaves the ledger's one connection writing payments
// with synchronous=FULL, and that its write is applied.
func TestVolatileWritesLeaveTheLedgerSynced(t *testing.T) {
	ctx := context.Background()
	l, err := OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := synchronous(t, l); got != 2 {
		t.Fatalf("synchronous = %d at open, want 2 (FULL)", got)
	}
	if err := execVolatile(l, "CREATE TABLE v (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if err := execVolatile(l, "INSERT INTO v (x) VALUES (?)", 7); err != nil {
		t.Fatal(err)
	}
	if got := synchronous(t, l); got != 2 {
		t.Fatalf("synchronous = %d after a volatile write, want 2 (FULL)", got)
	}
	if err := execVolatile(l, "INSERT INTO missing (x) VALUES (1)"); err == nil {
		t.Fatal("a write to a missing table succeeded")
	}
	if got := synchronous(t, l); got != 2 {
		t.Fatalf("synchronous = %d after a failed volatile write, want 2 (FULL)", got)
	}
	var x int
	if err := l.db.QueryRowContext(ctx, "SELECT x FROM v").Scan(&x); err != nil || x != 7 {
		t.Fatalf("the volatile write read back %d, %v; want 7", x, err)
	}
}
