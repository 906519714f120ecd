package payments

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// newID is a random payment id.
func newID(tb testing.TB) string {
	tb.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	return "pay_" + hex.EncodeToString(b[:])
}

func TestKeptResendAfterSettle(t *testing.T) {
	k := newKept(t, nil, nil)
	h := exactHeader(t, x402test.Key(t), k.g.Requirements(), "")
	st := k.mustDeliver(t, keptRequest(h, "a"), `{"out":1}`)
	a, err := k.g.Check(context.Background(), keptRequest(h, "a"))
	wantReplayed(t, wantReplay(t, a, err, sandboxd.ReplayByPayment), `{"out":1}`, st)
	if k.settles() != 1 || len(k.s.calls) != 2 {
		t.Fatalf("settler calls %v, want one check and one settlement", k.s.calls)
	}
	// The same header with another body: 402 already used, as before.
	_, err = begin(k.g, context.Background(), keptRequest(h, "b"))
	wantPaymentError(t, err, "already used")
}

func TestKeptResendExpired(t *testing.T) {
	k := newKept(t, nil, nil)
	h := exactHeader(t, x402test.Key(t), k.g.Requirements(), "")
	st := k.mustDeliver(t, keptRequest(h, "a"), `{"out":1}`)
	k.at(x402test.Now.Add(5 * time.Minute)) // past validBefore, within keep
	a, err := k.g.Check(context.Background(), keptRequest(h, "a"))
	wantReplayed(t, wantReplay(t, a, err, sandboxd.ReplayByPayment), `{"out":1}`, st)
	// Past validBefore + keep: refused for its time, no lookup.
	k.at(x402test.Now.Add(time.Hour))
	before := k.obs.count()
	_, err = k.g.Check(context.Background(), keptRequest(h, "a"))
	wantPaymentError(t, err, x402.ReasonValidBefore)
	if k.obs.count() != before {
		t.Fatal("a payment expired for longer than keep was looked up")
	}
}

func TestKeptResendWhileRunning(t *testing.T) {
	ctx := context.Background()
	k := newKept(t, nil, nil)
	h := exactHeader(t, x402test.Key(t), k.g.Requirements(), "")
	c, err := begin(k.g, ctx, keptRequest(h, "a"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := k.g.Check(ctx, keptRequest(h, "a"))
	r := wantReplay(t, a, err, sandboxd.ReplayByPayment)
	type result struct {
		ans *sandboxd.StoredAnswer
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		ans, err := r.Answer(ctx)
		done <- result{ans, err, time.Now()}
	}()
	time.Sleep(100 * time.Millisecond)
	settled := time.Now()
	st, err := c.Settle(ctx, delivered(`{"out":2}`))
	if err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil || string(got.ans.Body) != `{"out":2}` || got.at.Before(settled) {
		t.Fatalf("waiting retry answered %+v, %v at %v (settled at %v)", got.ans, got.err, got.at, settled)
	}
	if got.ans.Settlement.Transaction != st.Transaction || k.settles() != 1 {
		t.Fatalf("settlement %+v, settles %d; want the first's, once", got.ans.Settlement, k.settles())
	}
}

func TestKeptByID(t *testing.T) {
	ctx := context.Background()
	k := newKept(t, nil, nil)
	key, id := x402test.Key(t), newID(t)
	st := k.mustDeliver(t, keptRequest(exactHeader(t, key, k.g.Requirements(), id), "a"), `{"out":3}`)
	// A new payment of the same payer with the same id and request.
	pp := withID(x402test.Payload(t, key, k.g.Requirements(), nil), id)
	a, err := k.g.Check(ctx, keptRequest(x402test.Header(t, x402.HeaderPaymentSignature, pp), "a"))
	wantReplayed(t, wantReplay(t, a, err, sandboxd.ReplayByID), `{"out":3}`, st)
	if _, err := k.l.Get(ctx, pp.Payload.Authorization.From, pp.Payload.Authorization.Nonce); err == nil {
		t.Fatal("the replayed payment was reserved")
	}
	if k.settles() != 1 || len(k.s.calls) != 2 {
		t.Fatalf("settler calls %v, want the first's only", k.s.calls)
	}
}

func TestKeptIDOtherRequest(t *testing.T) {
	ctx := context.Background()
	k := newKept(t, nil, nil)
	key, id := x402test.Key(t), newID(t)
	k.mustDeliver(t, keptRequest(exactHeader(t, key, k.g.Requirements(), id), "a"), `{"out":4}`)
	pp := withID(x402test.Payload(t, key, k.g.Requirements(), nil), id)
	_, err := k.g.Check(ctx, keptRequest(x402test.Header(t, x402.HeaderPaymentSignature, pp), "b"))
	if e := wantCode(t, err, sandboxd.CodeConflict); e.Replay != nil || e.RetryAfter != 0 {
		t.Fatalf("conflict %+v carries a replay or a retry", e)
	}
	if _, err := k.l.Get(ctx, pp.Payload.Authorization.From, pp.Payload.Authorization.Nonce); err == nil {
		t.Fatal("the refused payment was reserved")
	}
	if len(k.s.calls) != 2 {
		t.Fatalf("settler calls %v: the conflict reached the settler", k.s.calls)
	}
}

func TestKeptIDOtherPayer(t *testing.T) {
	ctx := context.Background()
	k := newKept(t, nil, nil)
	id := newID(t)
	k.mustDeliver(t, keptRequest(exactHeader(t, x402test.Key(t), k.g.Requirements(), id), "a"), `{"out":5}`)
	a, err := k.g.Check(ctx, keptRequest(exactHeader(t, x402test.Key(t), k.g.Requirements(), id), "a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(sandboxd.Replay); ok {
		t.Fatal("another payer's payment with a seen id was answered the first payer's answer")
	}
	c, err := a.Reserve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Settle(ctx, delivered(`{"out":6}`)); err != nil || k.settles() != 2 {
		t.Fatalf("other payer's own run: %v, settles %d", err, k.settles())
	}
}

func TestKeptIDNeedsFreshPayment(t *testing.T) {
	k := newKept(t, nil, nil)
	key, id := x402test.Key(t), newID(t)
	k.mustDeliver(t, keptRequest(exactHeader(t, key, k.g.Requirements(), id), "a"), `{"out":7}`)
	old := x402test.Payload(t, key, k.g.Requirements(), nil)
	k.mustDeliver(t, keptRequest(x402test.Header(t, x402.HeaderPaymentSignature, old), "c"), `{"out":8}`)
	// Another used payment of the payer given the id, with the first's
	// body: already used, as with any other body (no oracle for the id).
	_, err := begin(k.g, context.Background(), keptRequest(x402test.Header(t, x402.HeaderPaymentSignature,
		withID(old, id)), "a"))
	wantPaymentError(t, err, "already used")
}

func TestKeptMalformedID(t *testing.T) {
	k := newKept(t, nil, nil)
	h := exactHeader(t, x402test.Key(t), k.g.Requirements(), "short")
	_, err := k.g.Check(context.Background(), keptRequest(h, "a"))
	wantCode(t, err, sandboxd.CodeInvalid)
	if k.obs.count() != 0 || len(k.s.calls) != 0 {
		t.Fatal("a malformed id was looked up or checked")
	}
	// Without retries the extension is not read at all.
	g, _ := newTestGate(t, &fakeSettler{})
	if _, err := g.Check(context.Background(), keptRequest(h, "a")); err != nil {
		t.Fatalf("a gate that keeps no answers read the extension: %v", err)
	}
}

func TestKeptFloodOfUnknownIDs(t *testing.T) {
	ctx := context.Background()
	k := newKept(t, nil, nil)
	for i := 0; i < 100; i++ { // forged: the signature is not the payer's
		pp := withID(x402test.Payload(t, x402test.Key(t), k.g.Requirements(), nil), newID(t))
		pp.Payload.Authorization.Value = "4999"
		_, err := k.g.Check(ctx, keptRequest(x402test.Header(t, x402.HeaderPaymentSignature, pp), "a"))
		wantPaymentError(t, err)
	}
	if k.obs.count() != 0 || len(k.s.calls) != 0 {
		t.Fatalf("forged payments made %d lookups and %d remote calls, want none", k.obs.count(), len(k.s.calls))
	}
	k.s.checkErr = x402.Reject(x402.ReasonInsufficientFunds, "no funds")
	for i := 0; i < 20; i++ { // signed, unfunded: one lookup per remote check
		_, err := k.g.Check(ctx, keptRequest(exactHeader(t, x402test.Key(t), k.g.Requirements(), newID(t)), "a"))
		wantPaymentError(t, err)
	}
	if k.obs.count() != 20 || len(k.s.calls) != 20 {
		t.Fatalf("%d lookups, %d remote calls; want 20 of each", k.obs.count(), len(k.s.calls))
	}
}

func TestKeptReplayOnly(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	cfg.Prices = map[string]string{"big": "0.01"}
	k := newKept(t, &cfg, nil)
	probe := func(h map[string][]string) sandboxd.PaymentRequest {
		r := keptRequest(h, "a")
		r.ReplayOnly = true
		return r
	}
	h := exactHeader(t, x402test.Key(t), k.g.RequirementsFor("big"), "")
	if a, err := k.g.Check(ctx, probe(h)); a != nil || err != nil {
		t.Fatalf("probe of nothing kept: %v, %v; want (nil, nil)", a, err)
	}
	r := keptRequest(h, "a")
	r.Environment = "big"
	st := k.mustDeliver(t, r, `{"out":8}`)
	calls := len(k.s.calls)
	// The probe of an ended session names no environment.
	a, err := k.g.Check(ctx, probe(h))
	wantReplayed(t, wantReplay(t, a, err, sandboxd.ReplayByPayment), `{"out":8}`, st)
	if a, err := k.g.Check(ctx, keptRequest(h, "b")); err == nil && a != nil {
		if _, ok := a.(sandboxd.Replay); ok {
			t.Fatal("another request was replayed")
		}
	}
	if len(k.s.calls) != calls {
		t.Fatalf("a probe reached the settler: %v", k.s.calls)
	}
}

func TestKeptRace(t *testing.T) {
	ctx := context.Background()
	k := newKept(t, nil, nil)
	h := exactHeader(t, x402test.Key(t), k.g.Requirements(), newID(t))
	c, err := k.race(t, keptRequest(h, "a"), keptRequest(h, "a"))
	e := wantCode(t, err, sandboxd.CodeConflict)
	if e.Replay == nil {
		t.Fatal("the race's loser carries no replay")
	}
	st, err := c.Settle(ctx, delivered(`{"out":9}`))
	if err != nil {
		t.Fatal(err)
	}
	wantReplayed(t, e.Replay, `{"out":9}`, st)
}

func TestKeptReleasedRunsAgain(t *testing.T) {
	ctx := context.Background()
	k := newKept(t, nil, nil)
	h := exactHeader(t, x402test.Key(t), k.g.Requirements(), newID(t))
	c, err := begin(k.g, ctx, keptRequest(h, "a"))
	if err != nil {
		t.Fatal(err)
	}
	c.Release(ctx)
	a, err := k.g.Check(ctx, keptRequest(h, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(sandboxd.Replay); ok {
		t.Fatal("a released payment was replayed")
	}
	c, err = a.Reserve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Release(ctx)
}

func TestKeptPending(t *testing.T) {
	ctx := context.Background()
	k := newKept(t, nil, nil)
	k.s.settleTx = "0x" + hex.EncodeToString(make([]byte, 32))
	k.s.settleErr = sandboxd.Errorf(sandboxd.CodeUnavailable, "test", "timed out after sending")
	h := exactHeader(t, x402test.Key(t), k.g.Requirements(), "")
	c, err := begin(k.g, ctx, keptRequest(h, "a"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Settle(ctx, delivered(`{"out":10}`))
	wantCode(t, err, sandboxd.CodePending)
	a, err := k.g.Check(ctx, keptRequest(h, "a"))
	ans, err := wantReplay(t, a, err, sandboxd.ReplayByPayment).Answer(ctx)
	e := wantCode(t, err, sandboxd.CodePending)
	if sr := errReport(t, e); sr.ErrorReason != ledger.ReasonSettlementPending || sr.Transaction != k.s.settleTx {
		t.Fatalf("pending replay reported %+v", sr)
	}
	if ans == nil || string(ans.Body) != `{"out":10}` {
		t.Fatalf("pending replay's stored answer %+v", ans)
	}
}
