package payments

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
	"sandboxd/x402/channel"
	"sandboxd/x402/x402test"
)

// testChannel is channel i of the tests' payer, as the seller adopts it.
func testChannel(tb testing.TB, i int) ledger.Channel {
	tb.Helper()
	cfg := channel.Config{
		Payer:              common.HexToAddress(ledgertest.Entry(0).Payer),
		PayerAuthorizer:    common.HexToAddress("0x00000000000000000000000000000000000000Aa"),
		Receiver:           common.HexToAddress(x402test.PayTo),
		ReceiverAuthorizer: common.HexToAddress("0x00000000000000000000000000000000000000Bb"),
		Token:              common.HexToAddress(x402test.Asset),
		WithdrawDelay:      channel.MinWithdrawDelay,
		Salt:               common.BigToHash(big.NewInt(int64(i))),
	}
	id, err := channel.ID(cfg, big.NewInt(84532))
	if err != nil {
		tb.Fatal(err)
	}
	return ledger.Channel{ID: id.Hex(), Network: "eip155:84532", Config: cfg, Balance: big.NewInt(1_000_000)}
}

// mustAdopt adopts c on l and returns the stored row.
func mustAdopt(tb testing.TB, l *ledger.SQL, c ledger.Channel) ledger.Channel {
	tb.Helper()
	got, err := l.AdoptChannel(context.Background(), c)
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

// mustChannel reads channel id on l.
func mustChannel(tb testing.TB, l *ledger.SQL, id string) ledger.Channel {
	tb.Helper()
	c, err := l.Channel(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// testHold is a hold named id of amount on top of charged, lasting for.
func testHold(id string, charged, amount int64, lasting time.Duration) ledger.Hold {
	return ledger.Hold{ID: id, Amount: big.NewInt(amount), Max: big.NewInt(charged + amount),
		Sig: []byte{0xAB, byte(charged), byte(amount)}, Until: time.Now().Add(lasting)}
}

// wantCharged checks channel id's charged total, calls and charges rows.
func wantCharged(tb testing.TB, l *ledger.SQL, id string, charged, calls int64) ledger.Channel {
	tb.Helper()
	c := mustChannel(tb, l, id)
	charges, err := l.ChannelCharges(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	if c.Charged.Int64() != charged || c.Calls != calls || int64(len(charges)) != calls {
		tb.Fatalf("channel charged %s in %d calls, %d charges rows; want %d in %d", c.Charged, c.Calls, len(charges), charged, calls)
	}
	return c
}

// TestChannelConformanceAdopt: adopting is idempotent (the first row
// wins), ids and addresses are stored in lower case and read back as
// given, and the listing filters by payer and state. A deposit's payments
// row carries its channel.
func TestChannelConformanceAdopt(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		loc := b.Location(t)
		l := ledgertest.Open(t, ledger.Config{Ledger: loc, Replica: "a"})
		c := testChannel(t, 1)
		c.ID = "0x" + fmt.Sprintf("%X", common.HexToHash(c.ID).Bytes())
		got := mustAdopt(t, l, c)
		if got.ID != common.HexToHash(c.ID).Hex() || got.Config != c.Config || got.State != ledger.ChannelOpen ||
			got.Charged.Sign() != 0 || got.Balance.Cmp(c.Balance) != 0 || got.Hold != nil || !got.SyncedAt.IsZero() {
			t.Fatalf("adopted %+v", got)
		}
		again := c
		again.Charged, again.Claimed = big.NewInt(5), big.NewInt(5)
		if got := mustAdopt(t, l, again); got.Charged.Sign() != 0 || !got.CreatedAt.Equal(got.UpdatedAt) {
			t.Fatalf("a second adoption changed the row: %+v", got)
		}
		if _, err := l.Channel(ctx, testChannel(t, 2).ID); !errors.Is(err, ledger.ErrNoChannel) {
			t.Fatalf("unknown channel: %v, want ErrNoChannel", err)
		}
		if _, err := l.AdoptChannel(ctx, ledger.Channel{ID: "0x1234"}); err == nil {
			t.Fatal("a short channel id was adopted")
		}
		closed := testChannel(t, 3)
		closed.State = ledger.ChannelClosed
		mustAdopt(t, l, closed)
		for _, tc := range []struct {
			f    ledger.ChannelFilter
			want int
		}{
			{ledger.ChannelFilter{}, 2},
			{ledger.ChannelFilter{Payer: "0xABCDEF0000000000000000000000000000000001"}, 2},
			{ledger.ChannelFilter{Payer: x402test.PayTo}, 0},
			{ledger.ChannelFilter{State: ledger.ChannelClosed}, 1},
			{ledger.ChannelFilter{Limit: 1}, 1},
		} {
			if rows, err := l.ListChannels(ctx, tc.f); err != nil || len(rows) != tc.want {
				t.Errorf("ListChannels(%+v) = %d rows, %v; want %d", tc.f, len(rows), err, tc.want)
			}
		}
		var upper int
		if err := ledgertest.RawDB(t, b, loc).QueryRowContext(ctx, `SELECT COUNT(*) FROM channels
WHERE channel_id <> lower(channel_id) OR payer <> lower(payer) OR token <> lower(token)`).Scan(&upper); err != nil || upper != 0 {
			t.Errorf("%d rows hold upper case, %v", upper, err)
		}

		e := ledgertest.Entry(1)
		e.ChannelID = c.ID
		if err := l.Reserve(ctx, e); err != nil {
			t.Fatal(err)
		}
		if got := ledgertest.WantStatus(t, l, e, ledger.StatusReserved); got.ChannelID != strings.ToLower(c.ID) {
			t.Fatalf("deposit row's channel %q, want %q", got.ChannelID, strings.ToLower(c.ID))
		}
		if rows, err := l.List(ctx, ledger.Filter{}); err != nil || len(rows) != 1 || rows[0].ChannelID != strings.ToLower(c.ID) {
			t.Fatalf("List = %+v, %v", rows, err)
		}
	})
}

// TestChannelConformanceReserveCommit: a hold is taken once, committed
// once (the total, the voucher, a charges row), released once; while it
// lives no other request takes the channel, on any replica; a reservation
// on a stale total is refused; a restart clears only its replica's holds.
func TestChannelConformanceReserveCommit(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		loc := b.Location(t)
		a := ledgertest.Open(t, ledger.Config{Ledger: loc, Replica: "a"})
		other := b.Sibling(t, a, ledger.Config{Ledger: loc, Replica: "b"})
		ledgertest.Beat(t, a, other)
		id := mustAdopt(t, a, testChannel(t, 1)).ID
		h := testHold("h1", 0, 1000, time.Minute)
		if err := a.ReserveIncrement(ctx, id, big.NewInt(0), h); err != nil {
			t.Fatal(err)
		}
		if c := mustChannel(t, other, id); c.Hold == nil || c.Hold.ID != "h1" || c.Hold.Replica != "a" ||
			c.Hold.Max.Int64() != 1000 || c.Hold.Amount.Int64() != 1000 || string(c.Hold.Sig) != string(h.Sig) ||
			c.Hold.Until.Sub(h.Until).Abs() > 5*time.Second {
			t.Fatalf("held row %+v, hold %+v", c, c.Hold)
		}
		for _, l := range []*ledger.SQL{a, other} {
			if err := l.ReserveIncrement(ctx, id, big.NewInt(0), testHold("h2", 0, 1000, time.Minute)); !errors.Is(err, ledger.ErrChannelMoved) {
				t.Fatalf("%s's second reservation on a live hold: %v, want ErrChannelMoved", l.Replica(), err)
			}
		}
		got, err := a.CommitIncrement(ctx, id, "h1", big.NewInt(0), "/v1/code", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Charged.Int64() != 1000 || got.VoucherMax.Int64() != 1000 || string(got.VoucherSig) != string(h.Sig) ||
			got.Hold != nil || got.Calls != 1 || got.LastChargedAt.IsZero() {
			t.Fatalf("committed row %+v", got)
		}
		if _, err := a.CommitIncrement(ctx, id, "h1", big.NewInt(0), "/v1/code", nil); !errors.Is(err, ledger.ErrHoldLost) {
			t.Fatalf("a second commit: %v, want ErrHoldLost", err)
		}
		charges, err := other.ChannelCharges(ctx, id)
		if err != nil || len(charges) != 1 || charges[0].ChargedAfter.Int64() != 1000 || charges[0].Amount.Int64() != 1000 ||
			charges[0].Resource != "/v1/code" || charges[0].Replica != "a" || charges[0].VoucherMax.Int64() != 1000 {
			t.Fatalf("charges %+v, %v", charges, err)
		}
		if err := other.ReserveIncrement(ctx, id, big.NewInt(0), testHold("stale", 0, 1000, time.Minute)); !errors.Is(err, ledger.ErrChannelMoved) {
			t.Fatalf("a reservation on a stale total: %v, want ErrChannelMoved", err)
		}
		if err := other.ReserveIncrement(ctx, id, big.NewInt(1000), testHold("h3", 1000, 500, time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := a.ReleaseIncrement(ctx, id, "h1"); !errors.Is(err, ledger.ErrHoldLost) {
			t.Fatalf("releasing another request's hold: %v, want ErrHoldLost", err)
		}
		if err := other.ReleaseIncrement(ctx, id, "h3"); err != nil {
			t.Fatal(err)
		}
		if err := other.ReleaseIncrement(ctx, id, "h3"); !errors.Is(err, ledger.ErrHoldLost) {
			t.Fatalf("a second release: %v, want ErrHoldLost", err)
		}
		if c := wantCharged(t, a, id, 1000, 1); c.Hold != nil {
			t.Fatalf("released hold still there: %+v", c.Hold)
		}

		// A restart of a clears a's holds, never b's.
		id2 := mustAdopt(t, a, testChannel(t, 2)).ID
		if err := a.ReserveIncrement(ctx, id, big.NewInt(1000), testHold("ha", 1000, 1, time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := other.ReserveIncrement(ctx, id2, big.NewInt(0), testHold("hb", 0, 1, time.Minute)); err != nil {
			t.Fatal(err)
		}
		if n, err := a.ClearHolds(ctx); err != nil || n != 1 {
			t.Fatalf("ClearHolds = %d, %v; want a's one hold", n, err)
		}
		if mustChannel(t, a, id).Hold != nil || mustChannel(t, a, id2).Hold == nil {
			t.Fatal("ClearHolds cleared the wrong holds")
		}
	})
}

// TestChannelConformanceTakeover: a lapsed hold, or the hold of a replica
// whose lease ran out, is taken over by the next reservation; the first
// holder's commit then charges nothing (ErrHoldLost), and only the new
// holder's increment counts.
func TestChannelConformanceTakeover(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		loc := b.Location(t)
		a := ledgertest.Open(t, ledger.Config{Ledger: loc, Replica: "a"})
		other := b.Sibling(t, a, ledger.Config{Ledger: loc, Replica: "b"})
		dead := a.As("dead", nil) // never beats: its lease is long over
		ledgertest.Beat(t, a, other)
		for _, tc := range []struct {
			name  string
			first *ledger.SQL
			hold  ledger.Hold
		}{
			{"lapsed", other, testHold("lapsed", 0, 1000, -time.Second)},
			{"dead replica", dead, testHold("dead", 0, 1000, time.Hour)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				id := mustAdopt(t, a, testChannel(t, len(tc.name))).ID
				if err := tc.first.ReserveIncrement(ctx, id, big.NewInt(0), tc.hold); err != nil {
					t.Fatal(err)
				}
				if err := a.ReserveIncrement(ctx, id, big.NewInt(0), testHold("new", 0, 700, time.Minute)); err != nil {
					t.Fatalf("taking over: %v", err)
				}
				if _, err := tc.first.CommitIncrement(ctx, id, tc.hold.ID, big.NewInt(0), "/v1/code", nil); !errors.Is(err, ledger.ErrHoldLost) {
					t.Fatalf("the first holder's commit: %v, want ErrHoldLost", err)
				}
				if err := tc.first.ReleaseIncrement(ctx, id, tc.hold.ID); !errors.Is(err, ledger.ErrHoldLost) {
					t.Fatalf("the first holder's release: %v, want ErrHoldLost", err)
				}
				wantCharged(t, a, id, 0, 0)
				if _, err := a.CommitIncrement(ctx, id, "new", big.NewInt(0), "/v1/code", nil); err != nil {
					t.Fatal(err)
				}
				wantCharged(t, other, id, 700, 1)
			})
		}
	})
}

// TestChannelConformanceReserveOnce: two replicas, 50 goroutines each,
// reserve and commit (or now and then release) the same channel's
// increments, each from the total it last read: every increment is
// counted once. The total is the amount times the commits, one charges
// row each, at every multiple of the amount and nowhere else.
func TestChannelConformanceReserveOnce(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		a, other := ledgertest.TwoReplicas(t, b, ledger.Config{})
		ls := []*ledger.SQL{a, other}
		id := mustAdopt(t, a, testChannel(t, 1)).ID
		const amount, goal = 1000, 60
		var commits, releases, moved atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		start := make(chan struct{})
		for g := range 100 {
			l := ls[g%2]
			wg.Go(func() {
				<-start
				for i := 0; ; i++ {
					c, err := l.Channel(ctx, id)
					if err != nil {
						errs <- err
						return
					}
					if c.Charged.Int64() >= amount*goal {
						return
					}
					h := testHold(fmt.Sprintf("g%d-%d", g, i), c.Charged.Int64(), amount, time.Minute)
					switch err := l.ReserveIncrement(ctx, id, c.Charged, h); {
					case errors.Is(err, ledger.ErrChannelMoved):
						moved.Add(1)
						time.Sleep(time.Millisecond)
						continue
					case err != nil:
						errs <- err
						return
					}
					if i%4 == 3 {
						if err := l.ReleaseIncrement(ctx, id, h.ID); err != nil {
							errs <- err
							return
						}
						releases.Add(1)
						continue
					}
					if _, err := l.CommitIncrement(ctx, id, h.ID, c.Charged, "/v1/code", nil); err != nil {
						errs <- fmt.Errorf("commit of a live hold: %w", err)
						return
					}
					commits.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		t.Logf("%d commits, %d releases, %d reservations refused", commits.Load(), releases.Load(), moved.Load())
		if commits.Load() != goal {
			t.Fatalf("%d commits, want %d", commits.Load(), goal)
		}
		wantCharged(t, a, id, amount*commits.Load(), commits.Load())
		charges, err := a.ChannelCharges(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range charges {
			if c.ChargedAfter.Int64() != amount*int64(i+1) || c.Amount.Int64() != amount {
				t.Fatalf("charge %d: %+v", i, c)
			}
		}
	})
}
