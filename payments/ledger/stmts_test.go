package ledger

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestStatementsPreparedOnceWithOneConnection runs kept statements from
// many goroutines, in and out of transactions, on the SQLite ledger's one
// connection: each query is prepared once, and a transaction that finds
// its statements never waits for a connection it holds itself (a prepare
// inside it would: the ledger has one).
func TestStatementsPreparedOnceWithOneConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.db.ExecContext(ctx, "CREATE TABLE s (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	const insert, count = "INSERT INTO s (x) VALUES (?)", "SELECT COUNT(*) FROM s"
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := range 50 {
		wg.Go(func() {
			if g%2 == 0 {
				var n int
				errs <- l.stmts.in(nil).QueryRowContext(ctx, count).Scan(&n)
				return
			}
			l.stmts.warm(ctx, insert)
			errs <- l.inTx(ctx, func(tx *sql.Tx) error {
				_, err := l.stmts.in(tx).ExecContext(ctx, insert, g)
				return err
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := len(l.stmts.m); got != 2 {
		t.Fatalf("%d statements kept, want 2 (each query prepared once)", got)
	}
	var n int
	if err := l.db.QueryRowContext(ctx, count).Scan(&n); err != nil || n != 25 {
		t.Fatalf("%d rows written (%v), want 25", n, err)
	}
}
