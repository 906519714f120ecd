package payments

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/payments/channels"
	"sandboxd/payments/internal/answer"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
	"sandboxd/payments/retries"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// countObserver counts the keeper's lookups.
type countObserver struct {
	mu      sync.Mutex
	lookups int
}

func (o *countObserver) Lookup(bool, time.Duration)                      { o.mu.Lock(); o.lookups++; o.mu.Unlock() }
func (o *countObserver) Replay(string, string, time.Duration)            {}
func (o *countObserver) Kept(bool)                                       {}
func (o *countObserver) Swept(retries.SweepReport, time.Duration, error) {}

func (o *countObserver) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lookups
}

// kept is a gate that keeps answers, at a clock the test moves, over a
// fresh SQLite ledger and a fake settler.
type kept struct {
	g     *Gate
	l     *ledger.SQL
	s     *fakeSettler
	obs   *countObserver
	clock *ledgertest.Clock
}

// newKept returns a kept gate of cfg (testConfig's when nil) at
// x402test.Now; seller, when set, builds the channel seller it offers.
func newKept(tb testing.TB, cfg *Config, seller func(*ledger.SQL, answer.Keeping) *channels.Seller) *kept {
	tb.Helper()
	return newKeptWith(tb, cfg, seller, keptTuning{})
}

// keptTuning changes what newKeptWith builds: the keeper's configuration
// and options, and the store it reads (wrapped, to count or fail reads).
type keptTuning struct {
	config  func(*retries.Config)
	options func(*retries.Options)
	store   func(retries.Store) retries.Store
}

// newKeptWith is newKept, tuned by tune.
func newKeptWith(tb testing.TB, cfg *Config, seller func(*ledger.SQL, answer.Keeping) *channels.Seller,
	tune keptTuning) *kept {
	tb.Helper()
	if cfg == nil {
		c := testConfig(tb)
		cfg = &c
	}
	k := &kept{l: ledgertest.OpenFile(tb, cfg.Ledger), s: &fakeSettler{}, obs: &countObserver{}, clock: ledgertest.NewClock(x402test.Now)}
	if err := k.l.Heartbeat(context.Background()); err != nil { // its running rows are live
		tb.Fatal(err)
	}
	rc := retries.Config{Wait: 2 * time.Second}
	if tune.config != nil {
		tune.config(&rc)
	}
	rc = rc.WithDefaults(time.Duration(cfg.MaxTimeoutSeconds) * time.Second)
	ro := retries.Options{Observer: k.obs, PollEvery: 10 * time.Millisecond}
	if tune.options != nil {
		tune.options(&ro)
	}
	var store retries.Store = RetriesStore(k.l)
	if tune.store != nil {
		store = tune.store(store)
	}
	keeper := retries.New(rc, store, ro)
	o := options{Settler: k.s, Ledger: k.l, Now: k.clock.Now, Keeping: answer.Keeping{Keeper: keeper, Flow: time.Minute}}
	if seller != nil {
		o.Seller = seller(k.l, o.Keeping)
	}
	g, err := newGateWith(*cfg, o)
	if err != nil {
		tb.Fatal(err)
	}
	k.g = g
	return k
}

// at moves the gate's clock to t.
func (k *kept) at(t time.Time) { k.clock.Add(t.Sub(k.clock.Now())) }

// keptRequest is a one-shot HTTP run of the payment in h asking request
// (the identity's hash).
func keptRequest(h http.Header, request string) sandboxd.PaymentRequest {
	r := paidRequest(h)
	r.Request, r.Kind, r.Transport = request, sandboxd.AnswerRun, sandboxd.TransportHTTP
	return r
}

// withID is pp carrying the payment-identifier id (raw: an extension as
// sent, for malformed ones).
func withID(pp x402.PaymentPayload, id string) x402.PaymentPayload {
	pp.Extensions = map[string]json.RawMessage{x402.ExtensionPaymentIdentifier: json.RawMessage(
		`{"info":{"required":false,"id":"` + id + `"}}`)}
	return pp
}

// exactHeader is the PAYMENT-SIGNATURE of a new payment by key of req,
// carrying id when not "".
func exactHeader(tb testing.TB, key *ecdsa.PrivateKey, req x402.Requirements, id string) http.Header {
	tb.Helper()
	pp := x402test.Payload(tb, key, req, nil)
	if id != "" {
		pp = withID(pp, id)
	}
	return x402test.Header(tb, x402.HeaderPaymentSignature, pp)
}

// delivered is what a run delivered: an answer of body.
func delivered(body string) sandboxd.Delivered {
	return sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}, Status: http.StatusOK, Body: []byte(body)}
}

// mustDeliverKept checks, reserves and settles r with the answer body.
func (k *kept) mustDeliver(tb testing.TB, r sandboxd.PaymentRequest, body string) *sandboxd.Settlement {
	tb.Helper()
	ctx := context.Background()
	c, err := begin(k.g, ctx, r)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := c.Settle(ctx, delivered(body))
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// wantReplay asserts Check answered a Replay recognised by by.
func wantReplay(tb testing.TB, a sandboxd.Authorization, err error, by string) sandboxd.Replay {
	tb.Helper()
	if err != nil {
		tb.Fatalf("check: %v, want a replay", err)
	}
	r, ok := a.(sandboxd.Replay)
	if !ok {
		tb.Fatalf("check answered %T, want a Replay", a)
	}
	if r.By() != by {
		tb.Fatalf("replay by %q, want %q", r.By(), by)
	}
	return r
}

// wantReplayed asserts r answers body with the settlement st.
func wantReplayed(tb testing.TB, r sandboxd.Replay, body string, st *sandboxd.Settlement) {
	tb.Helper()
	ans, err := r.Answer(context.Background())
	if err != nil {
		tb.Fatalf("answer: %v", err)
	}
	if string(ans.Body) != body || ans.Status != http.StatusOK {
		tb.Fatalf("answer %d %q, want 200 %q", ans.Status, ans.Body, body)
	}
	if !reflect.DeepEqual(ans.Settlement, st) {
		tb.Fatalf("settlement %+v, want the original %+v", ans.Settlement, st)
	}
}

// wantCode asserts err is a *sandboxd.Error of code, and returns it.
func wantCode(tb testing.TB, err error, code sandboxd.Code) *sandboxd.Error {
	tb.Helper()
	var e *sandboxd.Error
	if !errors.As(err, &e) || e.Code != code {
		tb.Fatalf("error %v, want %s", err, code)
	}
	return e
}

// settles is how many settlements the fake settler was asked for.
func (k *kept) settles() int { return int(k.s.settles.Load()) }

// race checks first and second before either reserves, then reserves
// first, then second: first's charge, and second's refusal.
func (k *kept) race(tb testing.TB, first, second sandboxd.PaymentRequest) (sandboxd.Charge, error) {
	tb.Helper()
	ctx := context.Background()
	a, err := k.g.Check(ctx, first)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := k.g.Check(ctx, second)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := a.Reserve(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	_, err = b.Reserve(ctx)
	return c, err
}
