package ledger

import (
	"context"
	"path/filepath"
	"testing"
)

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
	if _, err := l.execVolatile(ctx, "CREATE TABLE v (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.execVolatile(ctx, "INSERT INTO v (x) VALUES (?)", 7); err != nil {
		t.Fatal(err)
	}
	if got := synchronous(t, l); got != 2 {
		t.Fatalf("synchronous = %d after a volatile write, want 2 (FULL)", got)
	}
	if _, err := l.execVolatile(ctx, "INSERT INTO missing (x) VALUES (1)"); err == nil {
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
