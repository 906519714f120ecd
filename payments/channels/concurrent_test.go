package channels

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// officialClient is the official batch-settlement client's view of one
// channel, shared by its concurrent calls: the charged total it believes.
type officialClient struct {
	h       *harness
	mu      sync.Mutex
	charged *big.Int
}

// callOutcome is how one call ended: the voucher that was charged, or the
// error it ended with.
type callOutcome struct {
	charged *big.Int
	err     error
}

// call pays one call as the official client does: a voucher on the charged
// total it believes; on a corrective 402 whose voucherState is its own
// signature it adopts chargedCumulativeAmount and retries once. The run
// between the reservation and the commit takes a few milliseconds.
func (cl *officialClient) call(t *testing.T) callOutcome {
	cl.mu.Lock()
	charged := new(big.Int).Set(cl.charged)
	cl.mu.Unlock()
	for attempt := 0; ; attempt++ {
		max := new(big.Int).Add(charged, price)
		st, err := cl.h.payAfter(cl.h.voucher(t, max.Int64()), time.Duration(rand.IntN(3000))*time.Microsecond)
		if err == nil {
			var extra struct {
				ChargedAmount string               `json:"chargedAmount"`
				ChannelState  channel.ChannelState `json:"channelState"`
			}
			if err := json.Unmarshal(st.Extra, &extra); err != nil || extra.ChargedAmount != price.String() ||
				extra.ChannelState.ChargedCumulativeAmount != max.String() {
				t.Errorf("settlement extra %s (%v), want chargedAmount %s and charged %s", st.Extra, err, price, max)
			}
			cl.mu.Lock()
			if max.Cmp(cl.charged) > 0 {
				cl.charged = max
			}
			cl.mu.Unlock()
			return callOutcome{charged: max}
		}
		c, ok := correctiveOf(err)
		if !ok || attempt == 1 || c.voucher == nil {
			return callOutcome{err: err}
		}
		adopted, _ := new(big.Int).SetString(c.state.ChargedCumulativeAmount, 10)
		if c.voucher.SignedMaxClaimable != c.state.ChargedCumulativeAmount || signer(t, cl.h.id, c.voucher, cl.h.chainID) != cl.h.config.PayerAuthorizer {
			t.Errorf("corrective %+v does not prove its charged total with the payer's own voucher", c)
			return callOutcome{err: err}
		}
		charged = adopted
	}
}

// payAfter pays p with a run of d between its reservation and its commit.
func (h *harness) payAfter(p *x402.Payment, d time.Duration) (*sandboxd.Settlement, error) {
	a, _, err := h.check(p)
	if err != nil {
		return nil, err
	}
	c, err := a.Reserve(context.Background())
	if err != nil {
		return nil, err
	}
	time.Sleep(d)
	return c.Settle(context.Background(), sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}})
}

// TestConcurrentVouchers: 100 calls of one official client at once on one
// channel. Every increment counts once: the charged total is the price
// times the calls answered, one charge row each, each bought by its own
// voucher; a call is charged at most once, and the calls that lost are
// answered corrective 402s or channel_busy, never a 5xx.
func TestConcurrentVouchers(t *testing.T) {
	const calls = 100
	h := newHarness(t, 200*time.Millisecond)
	h.open(t, 1_000_000_000, 0)
	cl := &officialClient{h: h, charged: new(big.Int)}
	outcomes := make([]callOutcome, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { outcomes[i] = cl.call(t) })
	}
	wg.Wait()

	paid := map[string]bool{}
	var refused []string
	for _, o := range outcomes {
		if o.err != nil {
			if sandboxd.ErrorCode(o.err) != sandboxd.CodePayment {
				t.Errorf("a call ended %v, want a 402 (corrective or channel_busy)", o.err)
			}
			refused = append(refused, sandboxd.ErrorMessage(o.err))
			continue
		}
		if paid[o.charged.String()] {
			t.Errorf("two calls were charged by the voucher of %s", o.charged)
		}
		paid[o.charged.String()] = true
	}
	row := h.store.get(t, h.idHex())
	rows := h.store.chargeRows(h.idHex())
	want := new(big.Int).Mul(price, big.NewInt(int64(len(paid))))
	if len(paid) == 0 || row.Charged.Cmp(want) != 0 || len(rows) != len(paid) || row.Calls != int64(len(paid)) || row.Hold != nil {
		t.Fatalf("%d calls answered, charged %s, %d charge rows, calls %d, hold %+v; want charged = %s x answers = charge rows, no hold",
			len(paid), row.Charged, len(rows), row.Calls, row.Hold, price)
	}
	slices.SortFunc(rows, func(a, b fakeCharge) int { return a.chargedAfter.Cmp(b.chargedAfter) })
	for i, r := range rows {
		after := new(big.Int).Mul(price, big.NewInt(int64(i+1)))
		if r.chargedAfter.Cmp(after) != 0 || r.max.Cmp(after) != 0 || r.amount.Cmp(price) != 0 || !paid[after.String()] {
			t.Fatalf("charge row %d: after %s, voucher %s, amount %s; want %s by the voucher of %s that a call was answered for",
				i, r.chargedAfter, r.max, r.amount, after, after)
		}
	}
	t.Logf("%d of %d calls answered; refusals: %d", len(paid), calls, len(refused))
}

// TestVoucherWaitsForHold: while a call holds the channel, another call's
// voucher on the charged total is answered the corrective 402 with the
// projected state (the holder's increment and voucher); the retry on that
// projected total waits for the hold, and is charged once it is committed.
func TestVoucherWaitsForHold(t *testing.T) {
	h := newHarness(t, 5*time.Second)
	h.open(t, 50000, 0)
	first := mustReserve(t, h, 5000)

	_, _, err := h.pay(h.voucher(t, 5000))
	c := mustCorrective(t, err)
	if c.code != channel.ReasonCumulativeMismatch || c.state.ChargedCumulativeAmount != "5000" || c.voucher == nil ||
		c.voucher.SignedMaxClaimable != "5000" || signer(t, h.id, c.voucher, h.chainID) != h.config.PayerAuthorizer {
		t.Fatalf("answered %+v while another call holds 5000, want the projected state (charged 5000, its voucher)", c)
	}

	a, _, err := h.check(h.voucher(t, 10000))
	if err != nil {
		t.Fatalf("the voucher on the projected total refused: %v", err)
	}
	reserved := make(chan error, 1)
	var second sandboxd.Charge
	go func() {
		var err error
		second, err = a.Reserve(context.Background())
		reserved <- err
	}()
	select {
	case err := <-reserved:
		t.Fatalf("the voucher on the projected total reserved (%v) while the first call still holds the channel", err)
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := first.Settle(context.Background(), sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}}); err != nil {
		t.Fatal(err)
	}
	if err := <-reserved; err != nil {
		t.Fatalf("the waiting voucher refused after the hold cleared: %v", err)
	}
	if _, err := second.Settle(context.Background(), sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}}); err != nil {
		t.Fatal(err)
	}
	if got := h.charged(t); got != 10000 || len(h.store.chargeRows(h.idHex())) != 2 {
		t.Fatalf("charged %d, want 10000 in two charges", got)
	}
}

// TestChannelBusy: a voucher on the projected total whose hold outlasts the
// wait is refused channel_busy with Retry-After, nothing held for it; the
// holder still commits.
func TestChannelBusy(t *testing.T) {
	h := newHarness(t, 50*time.Millisecond)
	h.open(t, 50000, 0)
	first := mustReserve(t, h, 5000)
	start := time.Now()
	_, _, err := h.pay(h.voucher(t, 10000))
	wantRefusal(t, err, ReasonChannelBusy)
	var se *sandboxd.Error
	if !errors.As(err, &se) || se.RetryAfter != time.Second {
		t.Fatalf("channel_busy with Retry-After %v, want 1s", se)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("refused after %s, before the wait of 50ms", waited)
	}
	if _, err := first.Settle(context.Background(), sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}}); err != nil {
		t.Fatal(err)
	}
	if got := h.charged(t); got != 5000 {
		t.Fatalf("charged %d, want 5000", got)
	}
}

// TestReleaseThenSameVoucher: a released reservation charges nothing, and
// the same voucher is taken again.
func TestReleaseThenSameVoucher(t *testing.T) {
	h := newHarness(t, 0)
	h.open(t, 50000, 0)
	v := h.voucher(t, 5000)
	c := mustReserve(t, h, 5000)
	c.Release(context.Background())
	if row := h.store.get(t, h.idHex()); row.Charged.Sign() != 0 || row.Hold != nil || len(h.store.chargeRows(h.idHex())) != 0 {
		t.Fatalf("after Release: charged %s, hold %+v; want nothing", row.Charged, row.Hold)
	}
	h.mustPay(t, v)
	if got := h.charged(t); got != 5000 {
		t.Fatalf("charged %d, want 5000", got)
	}
}

// TestLapsedHold: a hold whose time passed (its call's replica died) does
// not block the channel.
func TestLapsedHold(t *testing.T) {
	h := newHarness(t, 0)
	h.open(t, 50000, 0)
	h.store.setHold(h.idHex(), &ledger.Hold{ID: "dead", Amount: price, Max: price,
		Sig: signVoucher(t, h.payer, h.id, price, h.chainID), Until: time.Now().Add(-time.Second)})
	h.mustPay(t, h.voucher(t, 5000))
	if got := h.charged(t); got != 5000 {
		t.Fatalf("charged %d, want 5000", got)
	}
}

// TestHoldLost: a commit whose hold was taken over (its replica's lease
// lapsed) counts nothing and withholds the answer with 503.
func TestHoldLost(t *testing.T) {
	h := newHarness(t, 0)
	h.open(t, 50000, 0)
	c := mustReserve(t, h, 5000)
	h.store.setHold(h.idHex(), &ledger.Hold{ID: "another replica's", Amount: price, Max: price,
		Sig: signVoucher(t, h.payer, h.id, price, h.chainID), Until: time.Now().Add(time.Minute)})
	_, err := c.Settle(context.Background(), sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}})
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !errors.Is(err, ledger.ErrHoldLost) {
		t.Fatalf("Settle = %v, want CodeUnavailable (hold lost)", err)
	}
	if got := h.charged(t); got != 0 || len(h.store.chargeRows(h.idHex())) != 0 {
		t.Fatalf("charged %d after a lost hold, want 0", got)
	}
}

// TestCommitFailureReleasesHold: a commit the ledger could not make counts
// nothing and drops the hold, so the same voucher (as the answer says) is
// taken again at once rather than answered with a state projecting the
// uncounted increment until the hold lapses.
func TestCommitFailureReleasesHold(t *testing.T) {
	h := newHarness(t, 0)
	h.open(t, 50000, 0)
	v := h.voucher(t, 5000)
	c := mustReserve(t, h, 5000)
	h.store.mu.Lock()
	h.store.failCommit = sandboxd.Errorf(sandboxd.CodeUnavailable, "fake.commit", "the ledger cannot be reached")
	h.store.mu.Unlock()
	_, err := c.Settle(context.Background(), sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}})
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Fatalf("Settle = %v, want CodeUnavailable", err)
	}
	if _, _, err := h.pay(v); err != nil {
		t.Fatalf("the same voucher after a failed commit: %v", err)
	}
	if got := h.charged(t); got != 5000 {
		t.Fatalf("charged %d, want 5000", got)
	}
}

// TestSettleOnce: a charge counts once; settling it again is an internal
// error, and releasing it after does nothing.
func TestSettleOnce(t *testing.T) {
	h := newHarness(t, 0)
	h.open(t, 50000, 0)
	c := mustReserve(t, h, 5000)
	if _, err := c.Settle(t.Context(), sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}}); err != nil {
		t.Fatal(err)
	}
	next := mustReserve(t, h, 10000)
	if _, err := c.Settle(t.Context(), sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}}); sandboxd.ErrorCode(err) != sandboxd.CodeInternal {
		t.Fatalf("second Settle = %v, want CodeInternal", err)
	}
	c.Release(t.Context())
	if _, err := next.Settle(t.Context(), sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}}); err != nil {
		t.Fatalf("the next call's charge after the first was settled twice and released: %v", err)
	}
	if got := h.charged(t); got != 10000 || len(h.store.chargeRows(h.idHex())) != 2 {
		t.Fatalf("charged %d, want 10000 in two charges", got)
	}
}

// mustReserve checks and reserves the payer's voucher of max.
func mustReserve(tb testing.TB, h *harness, max int64) sandboxd.Charge {
	tb.Helper()
	a, _, err := h.check(h.voucher(tb, max))
	if err != nil {
		tb.Fatal(err)
	}
	c, err := a.Reserve(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
