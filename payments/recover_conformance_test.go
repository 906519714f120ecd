package payments

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
)

// TestLedgerConformanceReplicas: a restarting replica resolves only its own
// rows; rows of a replica silent for longer than the lease are resolved by
// a live one, which then holds them, so the silent one (if only slow) can
// no longer settle them; a live replica's rows are never touched.
func TestLedgerConformanceReplicas(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		// The lease runs on the database's clock: real time, a short lease.
		const lease = 3 * time.Second
		loc := b.Location(t)
		a := ledgertest.Open(t, ledger.Config{Ledger: loc, Replica: "a", Lease: lease})
		bb, c := b.Sibling(t, a, ledger.Config{Ledger: loc, Replica: "b", Lease: lease}), b.Sibling(t, a, ledger.Config{Ledger: loc, Replica: "c", Lease: lease})
		for _, l := range []*ledger.SQL{bb, c} {
			if err := l.Heartbeat(ctx); err != nil {
				t.Fatal(err)
			}
		}
		ledgertest.OpenRows(t, a, map[int]string{1: ledger.StatusReserved, 2: ledger.StatusSettling})
		ledgertest.OpenRows(t, bb, map[int]string{3: ledger.StatusReserved})
		s := &fakeSettler{} // NonceUsed: errNonceStateUnknown

		// Within the lease nobody touches anybody's rows.
		if rep, err := RecoverStale(ctx, c, s, nil); err != nil || rep != (RecoverReport{}) {
			t.Fatalf("RecoverStale within the lease = %+v, %v; want nothing", rep, err)
		}
		// A restart of b (its Recover at start) resolves b's row only.
		if rep, err := Recover(ctx, bb, s, nil); err != nil || rep != (RecoverReport{Released: 1}) {
			t.Fatalf("b's restart Recover = %+v, %v; want 1 released", rep, err)
		}
		ledgertest.WantStatus(t, a, ledgertest.Entry(1), ledger.StatusReserved)
		ledgertest.WantStatus(t, a, ledgertest.Entry(2), ledger.StatusSettling)
		ledgertest.WantStatus(t, a, ledgertest.Entry(3), ledger.StatusReleased)
		ledgertest.OpenRows(t, bb, map[int]string{4: ledger.StatusReserved})

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
		if got := ledgertest.WantStatus(t, a, ledgertest.Entry(1), ledger.StatusReleased); got.Replica != "c" {
			t.Fatalf("a's reserved row is held by %q, want c", got.Replica)
		}
		if got := ledgertest.WantStatus(t, a, ledgertest.Entry(2), ledger.StatusFailed); got.Reason != ledger.ReasonUnknownAfterRestart {
			t.Fatalf("a's settling row: %+v", got)
		}
		ledgertest.WantStatus(t, a, ledgertest.Entry(4), ledger.StatusReserved) // b is alive
		// a was only slow: it can no longer move what c took over.
		if err := a.MarkSettling(ctx, ledgertest.Entry(1).Payer, ledgertest.Entry(1).Nonce, nil); !errors.Is(err, ledger.ErrNotReserved) {
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
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		const lease, skew = 30 * time.Second, 31 * time.Second
		loc := b.Location(t)
		behind := ledgertest.Open(t, ledger.Config{Ledger: loc, Replica: "behind", Lease: lease,
			Now: func() time.Time { return time.Now().Add(-skew) }})
		ahead := b.Sibling(t, behind, ledger.Config{Ledger: loc, Replica: "ahead", Lease: lease,
			Now: func() time.Time { return time.Now().Add(skew) }})
		live := b.Sibling(t, behind, ledger.Config{Ledger: loc, Replica: "live", Lease: lease, Now: time.Now})
		ledgertest.OpenRows(t, live, map[int]string{1: ledger.StatusReserved})
		ledgertest.OpenRows(t, behind, map[int]string{2: ledger.StatusReserved})
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
			e := ledgertest.Entry(i)
			if got := ledgertest.WantStatus(t, holder, e, ledger.StatusReserved); got.Replica != holder.Replica() {
				t.Fatalf("row %d is held by %q, want %q", i, got.Replica, holder.Replica())
			}
			if err := holder.MarkSettling(ctx, e.Payer, e.Nonce, nil); err != nil {
				t.Fatalf("%s cannot settle its own reservation: %v", holder.Replica(), err)
			}
		}
	})
}

// TestLedgerConformanceRecover: at start, a reserved row is released; a
// settling one is settled or released as the chain says (onchain), failed
// when the settler cannot tell (facilitator), and left settling when the
// chain cannot be asked.
func TestLedgerConformanceRecover(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		for _, tc := range []struct {
			name string
			s    Settler
			want map[int]string
		}{
			{"onchain", &nonceOracle{used: map[string]bool{ledgertest.Entry(2).Nonce: true}},
				map[int]string{1: ledger.StatusReleased, 2: ledger.StatusSettled, 3: ledger.StatusReleased}},
			{"facilitator", &fakeSettler{}, map[int]string{1: ledger.StatusReleased, 2: ledger.StatusFailed, 3: ledger.StatusFailed}},
			{"chain down", &nonceOracle{err: errors.New("down")}, map[int]string{1: ledger.StatusReleased, 2: ledger.StatusSettling, 3: ledger.StatusSettling}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				l := ledgertest.Open(t, ledger.Config{Ledger: b.Location(t), Replica: "a"})
				ledgertest.OpenRows(t, l, map[int]string{1: ledger.StatusReserved, 2: ledger.StatusSettling, 3: ledger.StatusSettling})
				if _, err := Recover(ctx, l, tc.s, nil); err != nil {
					t.Fatal(err)
				}
				for i, state := range tc.want {
					ledgertest.WantStatus(t, l, ledgertest.Entry(i), state)
				}
			})
		}
	})
}

// TestKeepAliveResolvesSilentReplicas: a live replica's background loop
// beats its heartbeat and, once another replica has been silent for longer
// than the lease, releases that one's reservation, while its own stays
// reserved. Real clock, short lease.
func TestKeepAliveResolvesSilentReplicas(t *testing.T) {
	ctx := context.Background()
	const lease = 300 * time.Millisecond
	live := ledgertest.Open(t, ledger.Config{Ledger: filepath.Join(t.TempDir(), "ledger.db"), Replica: "live", Lease: lease})
	silent := live.As("silent", nil)
	if err := silent.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	ledgertest.OpenRows(t, silent, map[int]string{1: ledger.StatusReserved})
	ledgertest.OpenRows(t, live, map[int]string{2: ledger.StatusReserved})
	k := startKeepAlive(live, lease, &fakeSettler{}, nil)
	defer k.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := live.Get(ctx, ledgertest.Entry(1).Payer, ledgertest.Entry(1).Nonce)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == ledger.StatusReleased {
			if got.Replica != "live" {
				t.Fatalf("released by %q, want live", got.Replica)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the silent replica's row is still %+v after 10 s (lease %s)", got, lease)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ledgertest.WantStatus(t, live, ledgertest.Entry(2), ledger.StatusReserved)
}
