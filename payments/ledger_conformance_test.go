package payments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd/internal/pgtest"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
)

// ledgerBackend opens ledgers of one backend for the conformance suite.
type ledgerBackend struct {
	name string
	// location returns a fresh, empty ledger location (a path or a URL).
	location func(tb testing.TB) string
	// sibling returns a second handle on l's database (c.Ledger) as
	// another replica (c.Replica, with c's lease and clock): a separate
	// connection pool on PostgreSQL, as another host would have; on
	// SQLite, which one process owns, a view sharing l's connection.
	sibling func(tb testing.TB, l *ledger.SQL, c ledger.Config) *ledger.SQL
}

// ledgerBackends are the backends every conformance test runs against.
func ledgerBackends() []ledgerBackend {
	return []ledgerBackend{
		{
			name:     "sqlite",
			location: func(tb testing.TB) string { return filepath.Join(tb.TempDir(), "ledger.db") },
			sibling: func(tb testing.TB, l *ledger.SQL, c ledger.Config) *ledger.SQL {
				return l.As(c.Replica, c.Now)
			},
		},
		{
			name:     "postgres",
			location: pgtest.NewDatabase,
			sibling: func(tb testing.TB, l *ledger.SQL, c ledger.Config) *ledger.SQL {
				return mustLedgerConfig(tb, c)
			},
		},
	}
}

// rawDB opens the database at loc of backend b directly, past the ledger,
// closed at cleanup.
func rawDB(tb testing.TB, b ledgerBackend, loc string) *sql.DB {
	tb.Helper()
	driver := "pgx"
	if b.name == "sqlite" {
		driver = "sqlite"
	}
	db, err := sql.Open(driver, loc)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// forEachBackend runs test as a subtest per backend.
func forEachBackend(t *testing.T, test func(t *testing.T, b ledgerBackend)) {
	for _, b := range ledgerBackends() {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}

// mustLedgerConfig opens the ledger of c, closed at cleanup.
func mustLedgerConfig(tb testing.TB, c ledger.Config) *ledger.SQL {
	tb.Helper()
	l, err := ledger.Open(context.Background(), c)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

// twoReplicas opens a fresh ledger of backend b as replica "a" and a
// sibling as replica "b", both with c's lease and clock, both beating.
func twoReplicas(tb testing.TB, b ledgerBackend, c ledger.Config) (*ledger.SQL, *ledger.SQL) {
	tb.Helper()
	c.Ledger, c.Replica = b.location(tb), "a"
	a := mustLedgerConfig(tb, c)
	c.Replica = "b"
	other := b.sibling(tb, a, c)
	beat(tb, a, other)
	return a, other
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestLedgerConformanceRace: 50 goroutines on two replicas reserve the same
// payment at once; exactly one wins, the others get ledger.ErrAlreadyUsed.
func TestLedgerConformanceRace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b ledgerBackend) {
		ctx := context.Background()
		loc := b.location(t)
		a := mustLedgerConfig(t, ledger.Config{Ledger: loc, Replica: "a"})
		ls := []*ledger.SQL{a, b.sibling(t, a, ledger.Config{Ledger: loc, Replica: "b"})}
		e := testEntry(7)
		var wg sync.WaitGroup
		errs := make([]error, 50)
		start := make(chan struct{})
		for i := range errs {
			wg.Go(func() {
				<-start
				errs[i] = ls[i%2].Reserve(ctx, e)
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ledger.ErrAlreadyUsed):
				t.Errorf("goroutine %d: %v, want nil or ledger.ErrAlreadyUsed", i, err)
			}
		}
		if won != 1 {
			t.Fatalf("%d reservations won, want exactly 1", won)
		}
		wantStatus(t, a, e, ledger.StatusReserved)
	})
}

// ledgerOps are the moves of the state machine, by name.
var ledgerOps = map[string]func(ctx context.Context, l Ledger, e ledger.Entry) error{
	"reserve": func(ctx context.Context, l Ledger, e ledger.Entry) error { return l.Reserve(ctx, e) },
	"settling": func(ctx context.Context, l Ledger, e ledger.Entry) error {
		return l.MarkSettling(ctx, e.Payer, e.Nonce, nil)
	},
	"settled": func(ctx context.Context, l Ledger, e ledger.Entry) error {
		return l.MarkSettled(ctx, e.Payer, e.Nonce, "0xtx", "ok", nil)
	},
	"failed": func(ctx context.Context, l Ledger, e ledger.Entry) error {
		return l.MarkFailed(ctx, e.Payer, e.Nonce, "0xtx", x402.ReasonUnexpectedSettle)
	},
	"released": func(ctx context.Context, l Ledger, e ledger.Entry) error {
		return l.MarkReleased(ctx, e.Payer, e.Nonce)
	},
}

// pathTo are the moves that bring a new row to each state.
var pathTo = map[string][]string{
	"":                    nil,
	ledger.StatusReserved: {"reserve"},
	ledger.StatusSettling: {"reserve", "settling"},
	ledger.StatusSettled:  {"reserve", "settling", "settled"},
	ledger.StatusFailed:   {"reserve", "settling", "failed"},
	ledger.StatusReleased: {"reserve", "released"},
}

// TestLedgerConformanceTransitions tries every move from every state, on the
// replica holding the row and on another one (which may only reserve).
func TestLedgerConformanceTransitions(t *testing.T) {
	// want[from][op] is the state after op, or the error it returns.
	want := map[string]map[string]any{
		"":                    {"reserve": ledger.StatusReserved, "settling": ledger.ErrNotReserved, "settled": ledger.ErrNotReserved, "failed": ledger.ErrNotReserved, "released": ledger.ErrNotReserved},
		ledger.StatusReserved: {"reserve": ledger.ErrAlreadyUsed, "settling": ledger.StatusSettling, "settled": ledger.ErrNotReserved, "failed": ledger.ErrNotReserved, "released": ledger.StatusReleased},
		ledger.StatusSettling: {"reserve": ledger.ErrAlreadyUsed, "settling": ledger.ErrNotReserved, "settled": ledger.StatusSettled, "failed": ledger.StatusFailed, "released": ledger.StatusReleased},
		ledger.StatusSettled:  {"reserve": ledger.ErrAlreadyUsed, "settling": ledger.ErrNotReserved, "settled": ledger.ErrNotReserved, "failed": ledger.ErrNotReserved, "released": ledger.ErrNotReserved},
		ledger.StatusFailed:   {"reserve": ledger.ErrAlreadyUsed, "settling": ledger.ErrNotReserved, "settled": ledger.ErrNotReserved, "failed": ledger.ErrNotReserved, "released": ledger.ErrNotReserved},
		ledger.StatusReleased: {"reserve": ledger.StatusReserved, "settling": ledger.ErrNotReserved, "settled": ledger.ErrNotReserved, "failed": ledger.ErrNotReserved, "released": ledger.ErrNotReserved},
	}
	forEachBackend(t, func(t *testing.T, b ledgerBackend) {
		ctx := context.Background()
		loc := b.location(t)
		l := mustLedgerConfig(t, ledger.Config{Ledger: loc, Replica: "a"})
		other := b.sibling(t, l, ledger.Config{Ledger: loc, Replica: "b"})
		i := 100
		for from, ops := range want {
			for op, result := range ops {
				for _, by := range []*ledger.SQL{l, other} {
					i++
					e := testEntry(i)
					for _, step := range pathTo[from] {
						if err := ledgerOps[step](ctx, l, e); err != nil {
							t.Fatalf("setting up %q: %s: %v", from, step, err)
						}
					}
					err := ledgerOps[op](ctx, by, e)
					expect := result
					if by == other && op != "reserve" && from != "" {
						expect = ledger.ErrNotReserved // only the holder moves a row
					}
					name := fmt.Sprintf("%s from %q by %s", op, from, by.Replica())
					if wantErr, ok := expect.(error); ok {
						if !errors.Is(err, wantErr) {
							t.Errorf("%s = %v, want %v", name, err, wantErr)
						}
						continue
					}
					if err != nil {
						t.Errorf("%s = %v", name, err)
						continue
					}
					got := wantStatus(t, l, e, expect.(string))
					if got.Replica != by.Replica() {
						t.Errorf("%s: row held by %q, want %q", name, got.Replica, by.Replica())
					}
				}
			}
		}
	})
}

// TestLedgerConformanceReplicas: a restarting replica resolves only its own
// rows; rows of a replica silent for longer than the lease are resolved by
// a live one, which then holds them, so the silent one (if only slow) can
// no longer settle them; a live replica's rows are never touched.
func TestLedgerConformanceReplicas(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b ledgerBackend) {
		ctx := context.Background()
		// The lease runs on the database's clock: real time, a short lease.
		const lease = 3 * time.Second
		loc := b.location(t)
		a := mustLedgerConfig(t, ledger.Config{Ledger: loc, Replica: "a", Lease: lease})
		bb, c := b.sibling(t, a, ledger.Config{Ledger: loc, Replica: "b", Lease: lease}), b.sibling(t, a, ledger.Config{Ledger: loc, Replica: "c", Lease: lease})
		for _, l := range []*ledger.SQL{bb, c} {
			if err := l.Heartbeat(ctx); err != nil {
				t.Fatal(err)
			}
		}
		mustOpenRows(t, a, map[int]string{1: ledger.StatusReserved, 2: ledger.StatusSettling})
		mustOpenRows(t, bb, map[int]string{3: ledger.StatusReserved})
		s := &fakeSettler{} // NonceUsed: errNonceStateUnknown

		// Within the lease nobody touches anybody's rows.
		if rep, err := RecoverStale(ctx, c, s, nil); err != nil || rep != (RecoverReport{}) {
			t.Fatalf("RecoverStale within the lease = %+v, %v; want nothing", rep, err)
		}
		// A restart of b (its Recover at start) resolves b's row only.
		if rep, err := Recover(ctx, bb, s, nil); err != nil || rep != (RecoverReport{Released: 1}) {
			t.Fatalf("b's restart Recover = %+v, %v; want 1 released", rep, err)
		}
		wantStatus(t, a, testEntry(1), ledger.StatusReserved)
		wantStatus(t, a, testEntry(2), ledger.StatusSettling)
		wantStatus(t, a, testEntry(3), ledger.StatusReleased)
		mustOpenRows(t, bb, map[int]string{4: ledger.StatusReserved})

		// a falls silent past the lease while b and c beat.
		time.Sleep(lease + 500*time.Millisecond)
		for _, l := range []*ledger.SQL{bb, c} {
			if err := l.Heartbeat(ctx); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := RecoverStale(ctx, c, s, nil)
		if err != nil || rep != (RecoverReport{Released: 1, Failed: 1}) {
			t.Fatalf("RecoverStale after the lease = %+v, %v; want 1 released, 1 failed", rep, err)
		}
		if got := wantStatus(t, a, testEntry(1), ledger.StatusReleased); got.Replica != "c" {
			t.Fatalf("a's reserved row is held by %q, want c", got.Replica)
		}
		if got := wantStatus(t, a, testEntry(2), ledger.StatusFailed); got.Reason != ledger.ReasonUnknownAfterRestart {
			t.Fatalf("a's settling row: %+v", got)
		}
		wantStatus(t, a, testEntry(4), ledger.StatusReserved) // b is alive
		// a was only slow: it can no longer move what c took over.
		if err := a.MarkSettling(ctx, testEntry(1).Payer, testEntry(1).Nonce, nil); !errors.Is(err, ledger.ErrNotReserved) {
			t.Fatalf("the silent replica's MarkSettling = %v, want ledger.ErrNotReserved", err)
		}
		// A second pass finds nothing: each row is resolved once.
		if rep, err := RecoverStale(ctx, bb, s, nil); err != nil || rep != (RecoverReport{}) {
			t.Fatalf("second RecoverStale = %+v, %v", rep, err)
		}
	})
}

// TestLedgerConformanceSkewedReplica: replicas whose
// clocks are 31 s off, one ahead and one behind, with a 30 s lease: the
// one ahead does not find the live one silent, and the one behind is not
// found silent; neither loses or takes a reservation in flight, which the
// live replica then settles. Before, heartbeats were stamped and the lease
// cut off by each replica's own clock, and the replica ahead released the
// live one's reservation (its settlement then failed, the payment reusable).
func TestLedgerConformanceSkewedReplica(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b ledgerBackend) {
		ctx := context.Background()
		const lease, skew = 30 * time.Second, 31 * time.Second
		loc := b.location(t)
		behind := mustLedgerConfig(t, ledger.Config{Ledger: loc, Replica: "behind", Lease: lease,
			Now: func() time.Time { return time.Now().Add(-skew) }})
		ahead := b.sibling(t, behind, ledger.Config{Ledger: loc, Replica: "ahead", Lease: lease,
			Now: func() time.Time { return time.Now().Add(skew) }})
		live := b.sibling(t, behind, ledger.Config{Ledger: loc, Replica: "live", Lease: lease, Now: time.Now})
		mustOpenRows(t, live, map[int]string{1: ledger.StatusReserved})
		mustOpenRows(t, behind, map[int]string{2: ledger.StatusReserved})
		for _, l := range []*ledger.SQL{behind, ahead, live} {
			if err := l.Heartbeat(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for _, l := range []*ledger.SQL{ahead, live} {
			if rep, err := RecoverStale(ctx, l, &fakeSettler{}, nil); err != nil || rep != (RecoverReport{}) {
				t.Fatalf("%s's RecoverStale = %+v, %v; every replica is alive", l.Replica(), rep, err)
			}
		}
		for i, holder := range map[int]*ledger.SQL{1: live, 2: behind} {
			e := testEntry(i)
			if got := wantStatus(t, holder, e, ledger.StatusReserved); got.Replica != holder.Replica() {
				t.Fatalf("row %d is held by %q, want %q", i, got.Replica, holder.Replica())
			}
			if err := holder.MarkSettling(ctx, e.Payer, e.Nonce, nil); err != nil {
				t.Fatalf("%s cannot settle its own reservation: %v", holder.Replica(), err)
			}
		}
	})
}

// TestLedgerConformanceMigrations: reopening migrates nothing twice, and a
// database at a newer schema is refused with a message saying so.
func TestLedgerConformanceMigrations(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b ledgerBackend) {
		ctx := context.Background()
		loc := b.location(t)
		l := mustLedgerConfig(t, ledger.Config{Ledger: loc})
		mustOpenRows(t, l, map[int]string{1: ledger.StatusReserved})
		l.Close()
		l = mustLedgerConfig(t, ledger.Config{Ledger: loc})
		wantStatus(t, l, testEntry(1), ledger.StatusReserved)
		l.Close()
		db := rawDB(t, b, loc)
		var newer int
		if err := db.QueryRowContext(ctx, `UPDATE schema_version SET version = version + 1 RETURNING version`).Scan(&newer); err != nil {
			t.Fatal(err)
		}
		db.Close()
		_, err := ledger.Open(ctx, ledger.Config{Ledger: loc})
		if err == nil || !containsAll(err.Error(), fmt.Sprintf("version %d", newer), "newer") {
			t.Fatalf("open at a newer schema = %v, want a refusal naming the version", err)
		}
	})
}

// TestLedgerConformanceReport: List filters by state, time and payer, and
// Stats counts and sums by day and state.
func TestLedgerConformanceReport(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b ledgerBackend) {
		ctx := context.Background()
		clock := &fakeClock{t: time.Date(2026, 11, 1, 23, 0, 0, 0, time.UTC)}
		l := mustLedgerConfig(t, ledger.Config{Ledger: b.location(t), Now: clock.Now})
		mustOpenRows(t, l, map[int]string{1: ledger.StatusReserved, 2: ledger.StatusSettling})
		clock.Add(2 * time.Hour)
		mustOpenRows(t, l, map[int]string{3: ledger.StatusSettling})
		if err := l.MarkSettled(ctx, testEntry(3).Payer, testEntry(3).Nonce, "0xabc", "ok", nil); err != nil {
			t.Fatal(err)
		}
		other := testEntry(4)
		other.Payer = "0x00000000000000000000000000000000000000AA"
		if err := l.Reserve(ctx, other); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			f    ledger.Filter
			want int
		}{
			{ledger.Filter{}, 4},
			{ledger.Filter{State: ledger.StatusSettled}, 1},
			{ledger.Filter{Since: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)}, 2},
			{ledger.Filter{Payer: "0x00000000000000000000000000000000000000aa"}, 1},
			{ledger.Filter{Limit: 3}, 3},
		} {
			rows, err := l.List(ctx, tc.f)
			if err != nil || len(rows) != tc.want {
				t.Errorf("List(%+v) = %d rows, %v; want %d", tc.f, len(rows), err, tc.want)
			}
		}
		if rows, _ := l.List(ctx, ledger.Filter{State: ledger.StatusSettled}); len(rows) == 1 && rows[0].TxHash != "0xabc" {
			t.Errorf("settled row without its hash: %+v", rows[0])
		}
		stats, err := l.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []ledger.StatsRow{
			{Day: "2026-11-01", State: ledger.StatusReserved, Count: 1, Amount: "5000"},
			{Day: "2026-11-01", State: ledger.StatusSettling, Count: 1, Amount: "5000"},
			{Day: "2026-11-02", State: ledger.StatusReserved, Count: 1, Amount: "5000"},
			{Day: "2026-11-02", State: ledger.StatusSettled, Count: 1, Amount: "5000"},
		}
		if fmt.Sprint(stats) != fmt.Sprint(want) {
			t.Fatalf("Stats = %v, want %v", stats, want)
		}
	})
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestLedgerConformanceRecover: at start, a reserved row is released; a
// settling one is settled or released as the chain says (onchain), failed
// when the settler cannot tell (facilitator), and left settling when the
// chain cannot be asked.
func TestLedgerConformanceRecover(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b ledgerBackend) {
		ctx := context.Background()
		for _, tc := range []struct {
			name string
			s    Settler
			want map[int]string
		}{
			{"onchain", &nonceOracle{used: map[string]bool{testEntry(2).Nonce: true}},
				map[int]string{1: ledger.StatusReleased, 2: ledger.StatusSettled, 3: ledger.StatusReleased}},
			{"facilitator", &fakeSettler{}, map[int]string{1: ledger.StatusReleased, 2: ledger.StatusFailed, 3: ledger.StatusFailed}},
			{"chain down", &nonceOracle{err: errors.New("down")}, map[int]string{1: ledger.StatusReleased, 2: ledger.StatusSettling, 3: ledger.StatusSettling}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				l := mustLedgerConfig(t, ledger.Config{Ledger: b.location(t), Replica: "a"})
				mustOpenRows(t, l, map[int]string{1: ledger.StatusReserved, 2: ledger.StatusSettling, 3: ledger.StatusSettling})
				if _, err := Recover(ctx, l, tc.s, nil); err != nil {
					t.Fatal(err)
				}
				for i, state := range tc.want {
					wantStatus(t, l, testEntry(i), state)
				}
			})
		}
	})
}

// TestLedgerConformanceReopenAtOnce: a replica that closes its ledger can
// open it again at once with the same id (a restart): on PostgreSQL the
// id's lock is given up on Close, not whenever the server's backend ends.
func TestLedgerConformanceReopenAtOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b ledgerBackend) {
		loc := b.location(t)
		for i := 0; i < 20; i++ {
			l := mustLedgerConfig(t, ledger.Config{Ledger: loc})
			l.Close()
		}
	})
}
