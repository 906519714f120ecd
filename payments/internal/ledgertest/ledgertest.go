// Package ledgertest opens payment ledgers for tests, on each backend: SQLite
// in a temporary directory, and PostgreSQL (a fresh database on
// internal/pgtest's throwaway server) when SANDBOXD_INTEGRATION=1. A test
// package that runs the PostgreSQL backend runs its tests through
// pgtest.Main.
package ledgertest

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"sandboxd/internal/pgtest"
	"sandboxd/payments/ledger"
)

// Backend opens ledgers of one backend for the conformance suites.
type Backend struct {
	// Name is "sqlite" or "postgres".
	Name string
	// Location returns a fresh, empty ledger location (a path or a URL).
	Location func(tb testing.TB) string
	// Sibling returns a second handle on l's database (c.Ledger) as
	// another replica (c.Replica, with c's lease and clock): a separate
	// connection pool on PostgreSQL, as another host would have; on
	// SQLite, which one process owns, a view sharing l's connection.
	Sibling func(tb testing.TB, l *ledger.SQL, c ledger.Config) *ledger.SQL
}

// Backends are the backends every conformance test runs against.
func Backends() []Backend {
	return []Backend{
		{
			Name:     "sqlite",
			Location: func(tb testing.TB) string { return filepath.Join(tb.TempDir(), "ledger.db") },
			Sibling: func(tb testing.TB, l *ledger.SQL, c ledger.Config) *ledger.SQL {
				return l.As(c.Replica, c.Now)
			},
		},
		{
			Name:     "postgres",
			Location: pgtest.NewDatabase,
			Sibling: func(tb testing.TB, l *ledger.SQL, c ledger.Config) *ledger.SQL {
				return Open(tb, c)
			},
		},
	}
}

// ForEach runs test as a subtest per backend.
func ForEach(t *testing.T, test func(t *testing.T, b Backend)) {
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) { test(t, b) })
	}
}

// Open opens the ledger of c, closed at cleanup.
func Open(tb testing.TB, c ledger.Config) *ledger.SQL {
	tb.Helper()
	l, err := ledger.Open(context.Background(), c)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

// OpenFile opens the SQLite ledger at path, closed at cleanup.
func OpenFile(tb testing.TB, path string) *ledger.SQL {
	tb.Helper()
	l, err := ledger.OpenFile(context.Background(), path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

// RawDB opens the database at loc of backend b directly, past the ledger,
// closed at cleanup.
func RawDB(tb testing.TB, b Backend, loc string) *sql.DB {
	tb.Helper()
	driver := "pgx"
	if b.Name == "sqlite" {
		driver = "sqlite"
	}
	db, err := sql.Open(driver, loc)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// TwoReplicas opens a fresh ledger of backend b as replica "a" and a
// sibling as replica "b", both with c's lease and clock, both beating.
func TwoReplicas(tb testing.TB, b Backend, c ledger.Config) (*ledger.SQL, *ledger.SQL) {
	tb.Helper()
	c.Ledger, c.Replica = b.Location(tb), "a"
	a := Open(tb, c)
	c.Replica = "b"
	other := b.Sibling(tb, a, c)
	Beat(tb, a, other)
	return a, other
}

// Beat makes each replica's lease hold.
func Beat(tb testing.TB, ls ...*ledger.SQL) {
	tb.Helper()
	for _, l := range ls {
		if err := l.Heartbeat(context.Background()); err != nil {
			tb.Fatal(err)
		}
	}
}
