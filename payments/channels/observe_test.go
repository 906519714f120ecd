package channels

import (
	"context"
	"fmt"
	"math/big"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/payments/chain"
	"sandboxd/payments/ledger"
	"sandboxd/x402/channel"
)

// recorder is an Observer and Gauges that keeps what it was told.
type recorder struct {
	mu        sync.Mutex
	events    []string
	unclaimed *big.Int
	age       time.Duration
}

func (r *recorder) observe(op, outcome string, gas uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%s %s %d", op, outcome, gas))
}

func (r *recorder) gauges(unclaimed *big.Int, age time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unclaimed, r.age = unclaimed, age
}

// take returns the events told since the last take.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// TestSellerObserves: the seller tells its observer how each payment
// ended: a deposit mined (with its gas) and its voucher charged, a replay
// answered the corrective 402, a deposit refused at its check, a voucher
// released, and a deposit of unknown outcome pending with its voucher
// released.
func TestSellerObserves(t *testing.T) {
	h := newHarness(t, 0)
	rec := &recorder{}
	h.seller.observe = rec.observe
	ctx := context.Background()
	want := func(what string, events ...string) {
		t.Helper()
		if got := rec.take(); !slices.Equal(got, events) {
			t.Fatalf("%s: told %q, want %q", what, got, events)
		}
	}

	deposit := h.deposit(t, 50000, 5000, h.validBefore(), newSalt(t))
	h.mustPay(t, deposit)
	want("a deposit", "deposit mined 60000", "voucher charged 0")

	_, _, err := h.pay(h.voucher(t, 5000))
	mustCorrective(t, err)
	want("a replay", "voucher corrective 0")

	_, _, err = h.pay(h.deposit(t, 50000, 10000, time.Now().Unix()+1, newSalt(t)))
	wantRefusal(t, err, channel.ReasonValidBefore)
	want("a deposit expiring too soon", "voucher refused 0")

	a, _, err := h.check(h.voucher(t, 10000))
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Reserve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Release(ctx)
	c.Release(ctx)
	want("a release, twice", "voucher released 0")

	h.dep.outcome = depositUnknown
	if _, _, err := h.pay(h.deposit(t, 50000, 10000, h.validBefore(), newSalt(t))); err == nil {
		t.Fatal("a deposit of unknown outcome was charged")
	}
	want("a deposit of unknown outcome", "deposit pending 0", "voucher released 0")
}

// fakeClaimer mines every claim and sweep.
type fakeClaimer struct{}

func (fakeClaimer) Claim(context.Context, []chain.VoucherClaim) (chain.OpReceipt, error) {
	return chain.OpReceipt{Tx: fakeTx, GasUsed: 91234}, nil
}

func (fakeClaimer) Sweep(context.Context, common.Address, common.Address) (chain.OpReceipt, error) {
	return chain.OpReceipt{Tx: fakeTx, GasUsed: 40000}, nil
}

// TestBackgroundGaugesAndObserves: on a ledger, the background's gauges
// show the unclaimed charges and how long ago the least recently mirrored
// row was read (an hour before the mirror pass, moments after it, zero
// unclaimed after the claim pass), and its observer is told of the claim
// and the sweep with their gas.
func TestBackgroundGaugesAndObserves(t *testing.T) {
	ctx := context.Background()
	l, err := ledger.Open(ctx, ledger.Config{Ledger: filepath.Join(t.TempDir(), "ledger.db"), Replica: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h := newHarness(t, 0)
	row, err := l.AdoptChannel(ctx, ledger.Channel{ID: h.idHex(), Network: h.entry.Network, Config: h.config,
		Balance: big.NewInt(50000), SyncedAt: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	hold := ledger.Hold{ID: "call-1", Amount: price, Max: price, Sig: signVoucher(t, h.payer, h.id, price, h.chainID),
		Until: time.Now().Add(time.Minute)}
	if err := l.ReserveIncrement(ctx, row.ID, new(big.Int), hold); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CommitIncrement(ctx, row.ID, hold.ID, new(big.Int), testResource, nil); err != nil {
		t.Fatal(err)
	}
	h.reader.states = map[common.Hash]chain.ChannelState{h.id: {ID: h.id, Balance: big.NewInt(50000),
		TotalClaimed: new(big.Int), WithdrawAmount: new(big.Int), RefundNonce: new(big.Int)}}
	rec := &recorder{}
	b := NewBackground(BackgroundOptions{Books: l, Reader: h.reader, Claimer: fakeClaimer{}, Observe: rec.observe,
		Gauges: rec.gauges})

	b.gauge(ctx)
	if rec.unclaimed.Cmp(price) != 0 || rec.age < 59*time.Minute {
		t.Fatalf("before the mirror: unclaimed %s, age %s; want %s and an hour", rec.unclaimed, rec.age, price)
	}
	if _, err := b.mirrorPass(ctx); err != nil {
		t.Fatal(err)
	}
	b.gauge(ctx)
	if rec.age > time.Minute {
		t.Fatalf("after the mirror pass the mirror is %s old", rec.age)
	}
	if _, err := b.ClaimPass(ctx); err != nil {
		t.Fatal(err)
	}
	b.gauge(ctx)
	if rec.unclaimed.Sign() != 0 {
		t.Fatalf("after the claim pass %s unclaimed", rec.unclaimed)
	}
	if got, want := rec.take(), []string{"claim mined 91234", "sweep mined 40000"}; !slices.Equal(got, want) {
		t.Fatalf("told %q, want %q", got, want)
	}
}
