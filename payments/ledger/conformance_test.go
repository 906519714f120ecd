package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/internal/pgtest"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
)

// TestLedgerConformanceRace: 50 goroutines on two replicas reserve the same
// payment at once; exactly one wins, the others get ledger.ErrAlreadyUsed.
func TestLedgerConformanceRace(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		loc := b.Location(t)
		a := ledgertest.Open(t, ledger.Config{Ledger: loc, Replica: "a"})
		ls := []*ledger.SQL{a, b.Sibling(t, a, ledger.Config{Ledger: loc, Replica: "b"})}
		e := ledgertest.Entry(7)
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
		ledgertest.WantStatus(t, a, e, ledger.StatusReserved)
	})
}

// ledgerOps are the moves of the state machine, by name.
var ledgerOps = map[string]func(ctx context.Context, l *ledger.SQL, e ledger.Entry) error{
	"reserve": func(ctx context.Context, l *ledger.SQL, e ledger.Entry) error { return l.Reserve(ctx, e) },
	"settling": func(ctx context.Context, l *ledger.SQL, e ledger.Entry) error {
		return l.MarkSettling(ctx, e.Payer, e.Nonce, nil)
	},
	"settled": func(ctx context.Context, l *ledger.SQL, e ledger.Entry) error {
		return l.MarkSettled(ctx, e.Payer, e.Nonce, "0xtx", "ok", nil)
	},
	"failed": func(ctx context.Context, l *ledger.SQL, e ledger.Entry) error {
		return l.MarkFailed(ctx, e.Payer, e.Nonce, "0xtx", x402.ReasonUnexpectedSettle)
	},
	"released": func(ctx context.Context, l *ledger.SQL, e ledger.Entry) error {
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
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		loc := b.Location(t)
		l := ledgertest.Open(t, ledger.Config{Ledger: loc, Replica: "a"})
		other := b.Sibling(t, l, ledger.Config{Ledger: loc, Replica: "b"})
		i := 100
		for from, ops := range want {
			for op, result := range ops {
				for _, by := range []*ledger.SQL{l, other} {
					i++
					e := ledgertest.Entry(i)
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
					got := ledgertest.WantStatus(t, l, e, expect.(string))
					if got.Replica != by.Replica() {
						t.Errorf("%s: row held by %q, want %q", name, got.Replica, by.Replica())
					}
				}
			}
		}
	})
}

// TestLedgerConformanceMigrations: reopening migrates nothing twice, and a
// database at a newer schema is refused with a message saying so.
func TestLedgerConformanceMigrations(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		loc := b.Location(t)
		l := ledgertest.Open(t, ledger.Config{Ledger: loc})
		ledgertest.OpenRows(t, l, map[int]string{1: ledger.StatusReserved})
		l.Close()
		l = ledgertest.Open(t, ledger.Config{Ledger: loc})
		ledgertest.WantStatus(t, l, ledgertest.Entry(1), ledger.StatusReserved)
		l.Close()
		db := ledgertest.RawDB(t, b, loc)
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

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestLedgerConformanceReport: List filters by state, time and payer, and
// Stats counts and sums by day and state.
func TestLedgerConformanceReport(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		clock := ledgertest.NewClock(time.Date(2026, 11, 1, 23, 0, 0, 0, time.UTC))
		l := ledgertest.Open(t, ledger.Config{Ledger: b.Location(t), Now: clock.Now})
		ledgertest.OpenRows(t, l, map[int]string{1: ledger.StatusReserved, 2: ledger.StatusSettling})
		clock.Add(2 * time.Hour)
		ledgertest.OpenRows(t, l, map[int]string{3: ledger.StatusSettling})
		if err := l.MarkSettled(ctx, ledgertest.Entry(3).Payer, ledgertest.Entry(3).Nonce, "0xabc", "ok", nil); err != nil {
			t.Fatal(err)
		}
		other := ledgertest.Entry(4)
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

// TestLedgerConformanceReopenAtOnce: a replica that closes its ledger can
// open it again at once with the same id (a restart): on PostgreSQL the
// id's lock is given up on Close, not whenever the server's backend ends.
func TestLedgerConformanceReopenAtOnce(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		loc := b.Location(t)
		for i := 0; i < 20; i++ {
			l := ledgertest.Open(t, ledger.Config{Ledger: loc})
			l.Close()
		}
	})
}

// TestPostgresReplicaIDInUse: a second live process with a replica id
// already in use on the database is refused (it would resolve the first
// one's open payments at its start); once the first is gone the id is free.
func TestPostgresReplicaIDInUse(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	first, err := ledger.Open(ctx, ledger.Config{Ledger: url, Replica: "host-a/default"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ledger.Open(ctx, ledger.Config{Ledger: url, Replica: "host-a/default"})
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(sandboxd.ErrorMessage(err), `"host-a/default" is in use`) {
		t.Fatalf("second open with the same id = %v, want refused", err)
	}
	ledgertest.Open(t, ledger.Config{Ledger: url, Replica: "host-b/default"})
	first.Close()
	ledgertest.Open(t, ledger.Config{Ledger: url, Replica: "host-a/default"})
}
