package payments

import (
	"context"
	"errors"
	"math/big"
	"sync"
	"testing"
	"time"

	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
)

// mirrorOf is a mirror with balance, claimed and a withdrawal at at.
func mirrorOf(balance, claimed, at int64) ledger.Mirror {
	return ledger.Mirror{Balance: big.NewInt(balance), Claimed: big.NewInt(claimed), WithdrawAmount: big.NewInt(at % 7),
		WithdrawAt: at, RefundNonce: big.NewInt(3)}
}

// mustCharge reserves and commits an increment of amount on channel id.
func mustCharge(tb testing.TB, l *ledger.SQL, id string, amount int64) ledger.Channel {
	tb.Helper()
	ctx := context.Background()
	c := mustChannel(tb, l, id)
	h := testHold("charge-"+c.Charged.String(), c.Charged.Int64(), amount, time.Minute)
	if err := l.ReserveIncrement(ctx, id, c.Charged, h); err != nil {
		tb.Fatal(err)
	}
	c, err := l.CommitIncrement(ctx, id, h.ID, c.Charged, "/v1/code", nil)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// TestChannelConformanceMirror: the mirror writes the escrow's state and
// never the charged total or the hold, unless the escrow claimed more than
// was charged: then the total is raised to it and the hold on the old
// total dropped. A withdrawal that appears asks the claimer for a pass,
// once, and so does the next one. The mirror's batches go oldest first, open and refunding only.
func TestChannelConformanceMirror(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		clock := ledgertest.NewClock(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
		l := ledgertest.Open(t, ledger.Config{Ledger: b.Location(t), Replica: "a", Now: clock.Now})
		id := mustAdopt(t, l, testChannel(t, 1)).ID
		mustCharge(t, l, id, 1000)
		if err := l.ReserveIncrement(ctx, id, big.NewInt(1000), testHold("held", 1000, 500, time.Minute)); err != nil {
			t.Fatal(err)
		}
		clock.Add(time.Second)
		c, err := l.UpdateMirror(ctx, id, mirrorOf(9000, 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		if c.Charged.Int64() != 1000 || c.Hold == nil || c.Hold.ID != "held" || c.Balance.Int64() != 9000 ||
			c.RefundNonce.Int64() != 3 || !c.SyncedAt.Equal(clock.Now()) || c.Calls != 1 || c.VoucherMax.Int64() != 1000 {
			t.Fatalf("mirrored row %+v", c)
		}
		if s, err := l.ClaimerState(ctx); err != nil || !s.RequestedAt.IsZero() {
			t.Fatalf("claimer %+v, %v: a mirror without a withdrawal asked for a claim", s, err)
		}
		// A withdrawal appears: the claimer is asked at once, and only then.
		c, err = l.UpdateMirror(ctx, id, mirrorOf(9000, 1000, 1_900_000_000))
		if err != nil || c.WithdrawAt != 1_900_000_000 || c.WithdrawAmount.Int64() != 1_900_000_000%7 || c.Claimed.Int64() != 1000 || c.Charged.Int64() != 1000 {
			t.Fatalf("mirrored withdrawal %+v, %v", c, err)
		}
		asked := clock.Now()
		clock.Add(time.Second)
		if _, err := l.UpdateMirror(ctx, id, mirrorOf(9000, 1000, 1_900_000_000)); err != nil {
			t.Fatal(err)
		}
		if s, err := l.ClaimerState(ctx); err != nil || !s.RequestedAt.Equal(asked) {
			t.Fatalf("claimer %+v, %v; want asked at %s", s, err, asked)
		}
		// Finalized and asked for again between two reads: another withdrawal, asked at once.
		clock.Add(time.Second)
		if _, err := l.UpdateMirror(ctx, id, mirrorOf(9000, 1000, 1_900_003_601)); err != nil {
			t.Fatal(err)
		}
		if s, err := l.ClaimerState(ctx); err != nil || !s.RequestedAt.Equal(clock.Now()) {
			t.Fatalf("claimer %+v, %v; want asked again at %s for a new withdrawal", s, err, clock.Now())
		}
		if _, err := l.CommitIncrement(ctx, id, "held", big.NewInt(1000), "/v1/code", nil); err != nil {
			t.Fatalf("the hold did not survive the mirror: %v", err)
		}
		// The escrow claimed more than the ledger charged (lost state).
		if err := l.ReserveIncrement(ctx, id, big.NewInt(1500), testHold("doomed", 1500, 500, time.Minute)); err != nil {
			t.Fatal(err)
		}
		c, err = l.UpdateMirror(ctx, id, mirrorOf(9000, 4000, 0))
		if err != nil || c.Charged.Int64() != 4000 || c.Claimed.Int64() != 4000 || c.Hold != nil || c.Calls != 2 {
			t.Fatalf("raised row %+v, %v", c, err)
		}
		if _, err := l.CommitIncrement(ctx, id, "doomed", big.NewInt(1500), "/v1/code", nil); !errors.Is(err, ledger.ErrHoldLost) {
			t.Fatalf("a commit on the old total: %v, want ErrHoldLost", err)
		}
		if _, err := l.UpdateMirror(ctx, testChannel(t, 9).ID, mirrorOf(1, 0, 0)); !errors.Is(err, ledger.ErrNoChannel) {
			t.Fatalf("mirror of an unknown channel: %v, want ErrNoChannel", err)
		}

		// Batches: never synced first, then the oldest; closed rows never.
		never := mustAdopt(t, l, testChannel(t, 2)).ID
		closed := testChannel(t, 3)
		closed.State = ledger.ChannelClosed
		mustAdopt(t, l, closed)
		due, err := l.MirrorDue(ctx, 0)
		if err != nil || len(due) != 2 || due[0].ID != never || due[1].ID != id {
			t.Fatalf("MirrorDue = %v, %v; want %s then %s", ids(due), err, never, id)
		}
		if due, err := l.MirrorDue(ctx, 1); err != nil || len(due) != 1 {
			t.Fatalf("MirrorDue(1) = %v, %v", ids(due), err)
		}
	})
}

// ids are the channels' ids.
func ids(cs []ledger.Channel) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

// TestChannelConformanceClaimable: the claimer's batch is the open and
// refunding channels charged more than claimed, the oldest charge first,
// compared as numbers (9 < 10, though "9" > "10"); MarkClaimed only ever
// raises the claimed total.
func TestChannelConformanceClaimable(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		clock := ledgertest.NewClock(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
		l := ledgertest.Open(t, ledger.Config{Ledger: b.Location(t), Replica: "a", Now: clock.Now})
		older, newer, even := mustAdopt(t, l, testChannel(t, 1)).ID, mustAdopt(t, l, testChannel(t, 2)).ID, testChannel(t, 3)
		mustCharge(t, l, older, 10)
		clock.Add(time.Second)
		mustCharge(t, l, newer, 3000)
		even.Charged, even.Claimed = big.NewInt(9), big.NewInt(9)
		mustAdopt(t, l, even)
		got, err := l.Claimable(ctx, 0)
		if err != nil || len(got) != 2 || got[0].ID != older || got[1].ID != newer {
			t.Fatalf("Claimable = %v, %v; want %s then %s", ids(got), err, older, newer)
		}
		if got, err := l.Claimable(ctx, 1); err != nil || len(got) != 1 || got[0].ID != older {
			t.Fatalf("Claimable(1) = %v, %v", ids(got), err)
		}
		for _, step := range []struct{ mark, want int64 }{{9, 9}, {2, 9}, {10, 10}, {3, 10}} {
			if err := l.MarkClaimed(ctx, older, big.NewInt(step.mark)); err != nil {
				t.Fatal(err)
			}
			if c := mustChannel(t, l, older); c.Claimed.Int64() != step.want || c.Charged.Int64() != 10 {
				t.Fatalf("after MarkClaimed(%d): claimed %s charged %s, want claimed %d", step.mark, c.Claimed, c.Charged, step.want)
			}
		}
		if got, err := l.Claimable(ctx, 0); err != nil || len(got) != 1 || got[0].ID != newer {
			t.Fatalf("Claimable after the claim = %v, %v; want %s", ids(got), err, newer)
		}
		if err := l.MarkClaimed(ctx, testChannel(t, 9).ID, big.NewInt(1)); !errors.Is(err, ledger.ErrNoChannel) {
			t.Fatalf("MarkClaimed of an unknown channel: %v, want ErrNoChannel", err)
		}
	})
}

// TestChannelConformanceRefund: a refund begins only on an open channel
// no live request holds (a lapsed hold is dropped, so its request can no
// longer charge); while it runs no increment is reserved; it ends open or
// closed with the mirror written; a closed channel reopens.
func TestChannelConformanceRefund(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		loc := b.Location(t)
		l := ledgertest.Open(t, ledger.Config{Ledger: loc, Replica: "a"})
		other := b.Sibling(t, l, ledger.Config{Ledger: loc, Replica: "b"})
		ledgertest.Beat(t, l, other)
		id := mustAdopt(t, l, testChannel(t, 1)).ID
		if err := other.ReserveIncrement(ctx, id, big.NewInt(0), testHold("live", 0, 10, time.Minute)); err != nil {
			t.Fatal(err)
		}
		c, err := l.BeginRefund(ctx, id)
		if !errors.Is(err, ledger.ErrChannelMoved) || c.Hold == nil || c.State != ledger.ChannelOpen {
			t.Fatalf("BeginRefund on a held channel = %+v, %v; want the row and ErrChannelMoved", c, err)
		}
		if err := other.ReleaseIncrement(ctx, id, "live"); err != nil {
			t.Fatal(err)
		}
		if err := other.ReserveIncrement(ctx, id, big.NewInt(0), testHold("lapsed", 0, 10, -time.Second)); err != nil {
			t.Fatal(err)
		}
		if c, err := l.BeginRefund(ctx, id); err != nil || c.State != ledger.ChannelRefunding || c.Hold != nil {
			t.Fatalf("BeginRefund = %+v, %v", c, err)
		}
		if _, err := other.CommitIncrement(ctx, id, "lapsed", big.NewInt(0), "/v1/code", nil); !errors.Is(err, ledger.ErrHoldLost) {
			t.Fatalf("a lapsed hold's commit during the refund: %v, want ErrHoldLost", err)
		}
		if err := l.ReserveIncrement(ctx, id, big.NewInt(0), testHold("during", 0, 10, time.Minute)); !errors.Is(err, ledger.ErrChannelMoved) {
			t.Fatalf("a reservation while refunding: %v, want ErrChannelMoved", err)
		}
		if _, err := other.BeginRefund(ctx, id); !errors.Is(err, ledger.ErrChannelMoved) {
			t.Fatalf("a second refund: %v, want ErrChannelMoved", err)
		}
		if err := l.EndRefund(ctx, id, mirrorOf(600, 0, 0), false); err != nil {
			t.Fatal(err)
		}
		if c := mustChannel(t, l, id); c.State != ledger.ChannelOpen || c.Balance.Int64() != 600 || c.SyncedAt.IsZero() {
			t.Fatalf("after a partial refund: %+v", c)
		}
		if err := l.EndRefund(ctx, id, mirrorOf(0, 0, 0), true); !errors.Is(err, ledger.ErrChannelMoved) {
			t.Fatalf("EndRefund of an open channel: %v, want ErrChannelMoved", err)
		}
		if err := l.ReopenChannel(ctx, id); !errors.Is(err, ledger.ErrChannelMoved) {
			t.Fatalf("ReopenChannel of an open channel: %v, want ErrChannelMoved", err)
		}
		if _, err := l.BeginRefund(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := l.EndRefund(ctx, id, mirrorOf(0, 0, 0), true); err != nil {
			t.Fatal(err)
		}
		if c := mustChannel(t, l, id); c.State != ledger.ChannelClosed || c.Balance.Sign() != 0 {
			t.Fatalf("after a full refund: %+v", c)
		}
		if _, err := l.BeginRefund(ctx, id); !errors.Is(err, ledger.ErrChannelMoved) {
			t.Fatalf("BeginRefund of a closed channel: %v, want ErrChannelMoved", err)
		}
		if err := l.ReopenChannel(ctx, id); err != nil {
			t.Fatal(err)
		}
		mustCharge(t, l, id, 10)
		unknown := testChannel(t, 9).ID
		if _, err := l.BeginRefund(ctx, unknown); !errors.Is(err, ledger.ErrNoChannel) {
			t.Fatalf("BeginRefund of an unknown channel: %v", err)
		}
		if err := l.ReopenChannel(ctx, unknown); !errors.Is(err, ledger.ErrNoChannel) {
			t.Fatalf("ReopenChannel of an unknown channel: %v", err)
		}
	})
}

// TestChannelConformanceClaimer: of two live replicas racing for the
// claimer lease exactly one gets it and keeps it; a replica whose lease ran
// out loses it to the next that asks; requests and passes are recorded.
func TestChannelConformanceClaimer(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		loc := b.Location(t)
		a := ledgertest.Open(t, ledger.Config{Ledger: loc, Replica: "a"})
		ls := []*ledger.SQL{a, b.Sibling(t, a, ledger.Config{Ledger: loc, Replica: "b"})}
		ledgertest.Beat(t, ls...)
		if s, err := a.ClaimerState(ctx); err != nil || s != (ledger.ClaimerState{}) {
			t.Fatalf("claimer before any = %+v, %v", s, err)
		}
		var mu sync.Mutex
		won := map[string]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 20 {
			l := ls[g%2]
			wg.Go(func() {
				<-start
				ok, err := l.TakeClaimer(ctx)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					won[l.Replica()]++
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		if len(won) != 1 {
			t.Fatalf("the lease went to %v, want one replica", won)
		}
		holder, loser := ls[0], ls[1]
		if won["b"] > 0 {
			holder, loser = loser, holder
		}
		s, err := a.ClaimerState(ctx)
		if err != nil || s.Replica != holder.Replica() || !s.Live || s.Since.IsZero() {
			t.Fatalf("claimer = %+v, %v; want %s, live", s, err, holder.Replica())
		}
		for _, tc := range []struct {
			l    *ledger.SQL
			want bool
		}{{holder, true}, {loser, false}} {
			if ok, err := tc.l.TakeClaimer(ctx); err != nil || ok != tc.want {
				t.Fatalf("%s renews: %v, %v; want %v", tc.l.Replica(), ok, err, tc.want)
			}
		}
		if s2, _ := a.ClaimerState(ctx); !s2.Since.Equal(s.Since) {
			t.Fatalf("renewing moved since from %s to %s", s.Since, s2.Since)
		}

		// A replica that never beats takes nothing from a live one, and
		// loses what it holds to the next replica that asks.
		dead := a.As("dead", nil)
		if ok, err := dead.TakeClaimer(ctx); err != nil || ok {
			t.Fatalf("a silent replica took a live one's lease: %v, %v", ok, err)
		}
		if _, err := ledgertest.RawDB(t, b, loc).ExecContext(ctx, `UPDATE channel_claimer SET replica = 'dead'`); err != nil {
			t.Fatal(err)
		}
		if s, _ := a.ClaimerState(ctx); s.Replica != "dead" || s.Live {
			t.Fatalf("claimer %+v, want dead's, not live", s)
		}
		if ok, err := loser.TakeClaimer(ctx); err != nil || !ok {
			t.Fatalf("taking a silent replica's lease: %v, %v", ok, err)
		}
		if ok, err := dead.TakeClaimer(ctx); err != nil || ok {
			t.Fatalf("the silent replica kept its lease: %v, %v", ok, err)
		}

		if err := holder.RequestClaim(ctx); err != nil {
			t.Fatal(err)
		}
		pass := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
		if err := loser.ClaimPassDone(ctx, pass); err != nil {
			t.Fatal(err)
		}
		if s, err := a.ClaimerState(ctx); err != nil || s.Replica != loser.Replica() || s.RequestedAt.IsZero() || !s.LastPassAt.Equal(pass) {
			t.Fatalf("claimer = %+v, %v", s, err)
		}
	})
}

// TestChannelConformanceOps: an operation is recorded sending, updated
// by id, and listed from a time on.
func TestChannelConformanceOps(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		clock := ledgertest.NewClock(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
		l := ledgertest.Open(t, ledger.Config{Ledger: b.Location(t), Replica: "a", Now: clock.Now})
		if err := l.RecordOp(ctx, ledger.Op{ID: "op1", Kind: ledger.OpClaim, Channels: 3, Amount: big.NewInt(4000)}); err != nil {
			t.Fatal(err)
		}
		clock.Add(time.Minute)
		if err := l.RecordOp(ctx, ledger.Op{ID: "op2", Kind: ledger.OpSweep}); err != nil {
			t.Fatal(err)
		}
		if err := l.RecordOp(ctx, ledger.Op{ID: "op3", Kind: "steal"}); err == nil {
			t.Fatal("an unknown kind was recorded")
		}
		if err := l.RecordOp(ctx, ledger.Op{ID: "op1", Kind: ledger.OpClaim}); err == nil {
			t.Fatal("an id was recorded twice")
		}
		if err := l.UpdateOp(ctx, ledger.Op{ID: "op1", Status: ledger.OpMined, TxHash: "0xABC", Amount: big.NewInt(4000), GasUsed: 91234}); err != nil {
			t.Fatal(err)
		}
		if err := l.UpdateOp(ctx, ledger.Op{ID: "nope", Status: ledger.OpFailed}); !errors.Is(err, ledger.ErrNoOp) {
			t.Fatalf("UpdateOp of an unknown op: %v, want ErrNoOp", err)
		}
		ops, err := l.ListOps(ctx, time.Time{})
		if err != nil || len(ops) != 2 {
			t.Fatalf("ListOps = %+v, %v", ops, err)
		}
		if o := ops[0]; o.ID != "op1" || o.Status != ledger.OpMined || o.TxHash != "0xabc" || o.GasUsed != 91234 ||
			o.Channels != 3 || o.Amount.Int64() != 4000 || o.Replica != "a" || !o.UpdatedAt.After(o.CreatedAt) {
			t.Fatalf("op1 = %+v", o)
		}
		if o := ops[1]; o.ID != "op2" || o.Status != ledger.OpSending || o.Amount.Sign() != 0 {
			t.Fatalf("op2 = %+v", o)
		}
		if ops, err := l.ListOps(ctx, clock.Now()); err != nil || len(ops) != 1 || ops[0].ID != "op2" {
			t.Fatalf("ListOps(since) = %+v, %v", ops, err)
		}
	})
}
