package payments

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/internal/units"
	"sandboxd/payments/retries"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// The hostile cases of docs/design/retries.md §8 that need the gate, its
// SQLite ledger and the keeper together, beside those of retries_gate_test.go.

// spyStore is a retries.Store that counts the keeper's ledger reads, and
// can fail its lookups or hold them until let go.
type spyStore struct {
	retries.Store
	lookups, bodies atomic.Int32
	lookupErr       error
	// hold, when set, is waited on by every lookup; inFlight and peak
	// count the lookups under way.
	hold           chan struct{}
	inFlight, peak atomic.Int32
}

func (s *spyStore) LookupAnswer(ctx context.Context, payer, key, id string) (retries.Lookup, error) {
	s.lookups.Add(1)
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	if s.hold != nil {
		<-s.hold
	}
	if s.lookupErr != nil {
		return retries.Lookup{}, s.lookupErr
	}
	return s.Store.LookupAnswer(ctx, payer, key, id)
}

func (s *spyStore) AnswerBody(ctx context.Context, payer, key string) (retries.Meta, []byte, error) {
	s.bodies.Add(1)
	return s.Store.AnswerBody(ctx, payer, key)
}

// newSpied is a kept gate of cfg (testConfig's when nil) whose keeper
// reads through a spyStore, and that spy; tune, when set, adjusts the
// keeper's configuration.
func newSpied(t *testing.T, cfg *Config, tune func(*retries.Config)) (*kept, *spyStore) {
	t.Helper()
	spy := &spyStore{}
	k := newKeptWith(t, cfg, nil, keptTuning{config: tune, store: func(s retries.Store) retries.Store {
		spy.Store = s
		return spy
	}})
	return k, spy
}

// wantUnreserved asserts that the payment in h was never reserved.
func (k *kept) wantUnreserved(t *testing.T, h http.Header) {
	t.Helper()
	p := x402test.Decode(t, h)
	if _, err := k.l.Get(context.Background(), p.Exact.Authorization.From, p.Exact.Authorization.Nonce); err == nil {
		t.Fatal("the refused payment was reserved")
	}
}

// TestKeptNoLookupBeforeSignature: whatever carries an id but no valid
// signature of its payer (a header that does not decode, no signature, a
// payment for other terms, one valid only later), probes of ended sessions
// included, is refused from memory: not one ledger read, not one remote
// check, nothing reserved.
func TestKeptNoLookupBeforeSignature(t *testing.T) {
	ctx := context.Background()
	k, spy := newSpied(t, nil, nil)
	id := newID(t)
	signed := func(mutate func(*x402.Authorization)) string {
		pp := withID(x402test.Payload(t, x402test.Key(t), k.g.Requirements(), mutate), id)
		return x402test.Header(t, x402.HeaderPaymentSignature, pp).Get(x402.HeaderPaymentSignature)
	}
	unsigned := withID(x402test.Payload(t, x402test.Key(t), k.g.Requirements(), nil), id)
	unsigned.Payload.Signature = ""
	otherTerms := k.g.Requirements()
	otherTerms.PayTo = "0x000000000000000000000000000000000000dEaD"
	for name, header := range map[string]string{
		"not base64":   "%%%" + id,
		"not JSON":     base64.StdEncoding.EncodeToString([]byte(`{"x402Version":2,` + id)),
		"no signature": x402test.Header(t, x402.HeaderPaymentSignature, unsigned).Get(x402.HeaderPaymentSignature),
		"other terms": x402test.Header(t, x402.HeaderPaymentSignature,
			withID(x402test.Payload(t, x402test.Key(t), otherTerms, nil), id)).Get(x402.HeaderPaymentSignature),
		"forged value": func() string {
			pp := withID(x402test.Payload(t, x402test.Key(t), k.g.Requirements(), nil), id)
			pp.Payload.Authorization.Value = "4999"
			return x402test.Header(t, x402.HeaderPaymentSignature, pp).Get(x402.HeaderPaymentSignature)
		}(),
		"valid only later": signed(func(a *x402.Authorization) {
			a.ValidAfter = big.NewInt(x402test.Now.Add(time.Hour).Unix()).String()
			a.ValidBefore = big.NewInt(x402test.Now.Add(2 * time.Hour).Unix()).String()
		}),
	} {
		r := keptRequest(http.Header{x402.HeaderPaymentSignature: {header}}, "a")
		for range 50 {
			if a, err := k.g.Check(ctx, r); err == nil || a != nil {
				t.Fatalf("%s: accepted (%v)", name, a)
			}
		}
		r.ReplayOnly = true
		if a, err := k.g.Check(ctx, r); a != nil || err != nil {
			t.Fatalf("%s: probe answered %v, %v; want (nil, nil)", name, a, err)
		}
	}
	if spy.lookups.Load() != 0 || spy.bodies.Load() != 0 || len(k.s.calls) != 0 {
		t.Fatalf("%d lookups, %d reads of an answer, settler calls %v; want none", spy.lookups.Load(),
			spy.bodies.Load(), k.s.calls)
	}
}

// TestKeptLookupsInsideCheckSlots: signed payments of unfunded keys with
// fresh ids are looked up inside the check slots that bound their remote
// check: never more lookups at once than max_checks, and past check_wait
// the rest are refused busy (429) without a lookup.
func TestKeptLookupsInsideCheckSlots(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxChecks, cfg.CheckWait = 2, 50*time.Millisecond
	k, spy := newSpied(t, &cfg, nil)
	spy.hold = make(chan struct{})
	const n = 10
	errs := make(chan error, n)
	for range n {
		h := exactHeader(t, x402test.Key(t), k.g.Requirements(), newID(t))
		go func() {
			_, err := k.g.Check(context.Background(), keptRequest(h, "a"))
			errs <- err
		}()
	}
	busy := 0
	for range n - cfg.MaxChecks {
		if sandboxd.ErrorCode(<-errs) == sandboxd.CodeBusy {
			busy++
		}
	}
	close(spy.hold)
	for range cfg.MaxChecks {
		<-errs
	}
	if busy != n-cfg.MaxChecks || spy.peak.Load() > int32(cfg.MaxChecks) || spy.lookups.Load() != int32(cfg.MaxChecks) {
		t.Fatalf("%d busy, %d lookups (at most %d at once); want %d busy, %d lookups, at most %d at once", busy,
			spy.lookups.Load(), spy.peak.Load(), n-cfg.MaxChecks, cfg.MaxChecks, cfg.MaxChecks)
	}
}

// TestKeptMalformedIDs: a payment-identifier that does not follow the rule
// (too short, too long, oversized, characters outside A-Z a-z 0-9 _ -, id
// not a string, info not an object, Info for info, the extension not an
// object) is a 400 before any ledger access: no lookup, no remote check,
// nothing reserved, though the payment's signature is good.
func TestKeptMalformedIDs(t *testing.T) {
	ctx := context.Background()
	k, spy := newSpied(t, nil, nil)
	id := func(v string) string { return `{"info":{"required":false,"id":"` + v + `"}}` }
	for name, ext := range map[string]string{
		"15 characters":  id(strings.Repeat("a", 15)),
		"129 characters": id(strings.Repeat("a", 129)),
		"8 KiB":          id(strings.Repeat("a", 8<<10)),
		"a dot":          id("pay_0123456789.abcdef"),
		"a slash":        id("pay_0123456789/abcdef"),
		"a space":        id("pay_0123456789 abcdef"),
		"not ASCII":      id("pay_0123456789abcdé"),
		"id a number":    `{"info":{"required":false,"id":1234567890123456}}`,
		"info a string":  `{"info":"pay_0123456789abcdef"}`,
		"Info for info":  `{"Info":{"required":false,"id":"pay_0123456789abcdef"}}`,
		"no required":    `{"info":{"id":"pay_0123456789abcdef"}}`,
		"false":          `false`,
		"a string":       `"pay_0123456789abcdef"`,
	} {
		pp := x402test.Payload(t, x402test.Key(t), k.g.Requirements(), nil)
		pp.Extensions = map[string]json.RawMessage{x402.ExtensionPaymentIdentifier: json.RawMessage(ext)}
		h := x402test.Header(t, x402.HeaderPaymentSignature, pp)
		_, err := k.g.Check(ctx, keptRequest(h, "a"))
		if sandboxd.ErrorCode(err) != sandboxd.CodeInvalid {
			t.Errorf("%s: %v, want a 400", name, err)
			continue
		}
		k.wantUnreserved(t, h)
	}
	if spy.lookups.Load() != 0 || len(k.s.calls) != 0 {
		t.Fatalf("%d lookups, settler calls %v; want none", spy.lookups.Load(), k.s.calls)
	}
}

// TestKeptOtherPayerNeverReadsTheAnswer: another wallet that sends a seen
// id with the first's request never reads the first's answer: its own
// payment is a new one (its own run and settlement), and the first
// payer's retry by id still gets the first's answer.
func TestKeptOtherPayerNeverReadsTheAnswer(t *testing.T) {
	ctx := context.Background()
	k, spy := newSpied(t, nil, nil)
	first, id := x402test.Key(t), newID(t)
	st := k.mustDeliver(t, keptRequest(exactHeader(t, first, k.g.Requirements(), id), "a"), `{"out":"first"}`)
	for range 3 {
		a, err := k.g.Check(ctx, keptRequest(exactHeader(t, x402test.Key(t), k.g.Requirements(), id), "a"))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := a.(sandboxd.Replay); ok {
			t.Fatal("another payer's payment with a seen id was taken for a retry")
		}
	}
	if spy.bodies.Load() != 0 {
		t.Fatalf("another payer's payments read %d answers", spy.bodies.Load())
	}
	other := k.mustDeliver(t, keptRequest(exactHeader(t, x402test.Key(t), k.g.Requirements(), id), "a"), `{"out":"other"}`)
	if k.settles() != 2 || reflect.DeepEqual(other, st) {
		t.Fatalf("the other payer's own run: settles %d, settlement %+v", k.settles(), other)
	}
	a, err := k.g.Check(ctx, keptRequest(exactHeader(t, first, k.g.Requirements(), id), "a"))
	wantReplayed(t, wantReplay(t, a, err, sandboxd.ReplayByID), `{"out":"first"}`, st)
}

// TestKeptRaceIDOtherRequest: two new payments of one payer with the same
// id and two requests, both past the lookup before either reserved: the
// first reserves, the second is a 409 without a replay (its id is taken for
// another request), and its payment is not reserved.
func TestKeptRaceIDOtherRequest(t *testing.T) {
	ctx := context.Background()
	k := newKept(t, nil, nil)
	key, id := x402test.Key(t), newID(t)
	hb := exactHeader(t, key, k.g.Requirements(), id)
	c, err := k.race(t, keptRequest(exactHeader(t, key, k.g.Requirements(), id), "a"), keptRequest(hb, "b"))
	if e := wantCode(t, err, sandboxd.CodeConflict); e.Replay != nil || !strings.Contains(e.Message, "another request") {
		t.Fatalf("the other request's conflict %+v", e)
	}
	k.wantUnreserved(t, hb)
	if _, err := c.Settle(ctx, delivered(`{"out":"a"}`)); err != nil || k.settles() != 1 {
		t.Fatalf("the first: %v, settles %d", err, k.settles())
	}
}

// TestKeptHugeAnswer: an answer over max_answer_bytes is delivered and
// settled, and kept without its bytes: its retry, by payment or by id, is
// a 410 with the original settlement report, never a second run or
// settlement, and the retry's own payment is not reserved.
func TestKeptHugeAnswer(t *testing.T) {
	ctx := context.Background()
	k, _ := newSpied(t, nil, func(c *retries.Config) { c.MaxAnswerBytes = units.Bytes(1 << 10) })
	key, id := x402test.Key(t), newID(t)
	h := exactHeader(t, key, k.g.Requirements(), id)
	huge := `{"out":"` + strings.Repeat("x", 4<<10) + `"}`
	st := k.mustDeliver(t, keptRequest(h, "a"), huge)
	fresh := exactHeader(t, key, k.g.Requirements(), id)
	// Both carry the id of the answer's row: both are recognised by it.
	for by, retry := range map[string]http.Header{"the same payment": h, "a new payment": fresh} {
		a, err := k.g.Check(ctx, keptRequest(retry, "a"))
		ans, err := wantReplay(t, a, err, sandboxd.ReplayByID).Answer(ctx)
		e := wantCode(t, err, sandboxd.CodeGone)
		if ans != nil || e.Payment == nil || !reflect.DeepEqual(e.Payment.Settlement, st) ||
			!strings.Contains(e.Message, "not kept") {
			t.Fatalf("%s: %+v, %+v; want a 410 with the original report", by, ans, e)
		}
	}
	k.wantUnreserved(t, fresh)
	if k.settles() != 1 || len(k.s.calls) != 2 {
		t.Fatalf("settler calls %v, want the first's check and settlement only", k.s.calls)
	}
}

// TestKeptLookupUnavailable: a ledger that cannot be read at the lookup is
// a 503: nothing reserved, no remote check. A probe of an ended session
// (ReplayOnly) answers (nil, nil): the route's own refusal stands.
func TestKeptLookupUnavailable(t *testing.T) {
	ctx := context.Background()
	k, spy := newSpied(t, nil, nil)
	spy.lookupErr = errors.New("database is locked")
	h := exactHeader(t, x402test.Key(t), k.g.Requirements(), newID(t))
	_, err := k.g.Check(ctx, keptRequest(h, "a"))
	wantCode(t, err, sandboxd.CodeUnavailable)
	r := keptRequest(h, "a")
	r.ReplayOnly = true
	if a, err := k.g.Check(ctx, r); a != nil || err != nil {
		t.Fatalf("probe: %v, %v; want (nil, nil)", a, err)
	}
	k.wantUnreserved(t, h)
	if len(k.s.calls) != 0 {
		t.Fatalf("settler calls %v, want none", k.s.calls)
	}
}

// TestKeptHundredRetries: a hundred identical requests with one payment at
// once (a client retrying in a loop, or many proxies): one reserves, runs
// and settles; every other is a replay, from Check or from the race lost at
// Reserve, that waits for it; all hundred get its answer and its report,
// from one settlement.
func TestKeptHundredRetries(t *testing.T) {
	const n = 100
	k := newKeptWith(t, nil, nil, keptTuning{options: func(o *retries.Options) { o.MaxWaiters = n }})
	h := exactHeader(t, x402test.Key(t), k.g.Requirements(), newID(t))
	results := make(chan flowOutcome, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			<-start
			results <- k.answerOrRun(keptRequest(h, "a"), `{"out":"once"}`)
		})
	}
	close(start)
	wg.Wait()
	close(results)
	ran, answers := 0, 0
	var first *sandboxd.Settlement
	for r := range results {
		if r.err != nil {
			t.Fatalf("a request failed: %v", r.err)
		}
		if r.ran {
			ran++
		}
		if first == nil {
			first = r.report
		}
		if r.body == `{"out":"once"}` && reflect.DeepEqual(r.report, first) {
			answers++
		}
	}
	if ran != 1 || answers != n || k.settles() != 1 {
		t.Fatalf("%d ran, %d got the answer, %d settlements; want 1, %d, 1", ran, answers, k.settles(), n)
	}
}

// flowOutcome is what one paid request got: the answer's bytes and
// report, whether it was the one that ran, or its error.
type flowOutcome struct {
	body   string
	report *sandboxd.Settlement
	ran    bool
	err    error
}

// answerOrRun is a paid flow's part of r: a Replay (from Check, or carried
// by the race lost at Reserve) answered, or the run that delivers body
// (after a pause, so that others come while it runs) and settles.
func (k *kept) answerOrRun(r sandboxd.PaymentRequest, body string) (out flowOutcome) {
	ctx := context.Background()
	replayed := func(rep sandboxd.Replay) {
		ans, err := rep.Answer(ctx)
		if out.err = err; err == nil {
			out.body, out.report = string(ans.Body), ans.Settlement
		}
	}
	a, err := k.g.Check(ctx, r)
	if rep, ok := a.(sandboxd.Replay); ok && err == nil {
		replayed(rep)
		return out
	}
	if err != nil {
		out.err = err
		return out
	}
	c, err := a.Reserve(ctx)
	var e *sandboxd.Error
	if errors.As(err, &e) && e.Replay != nil {
		replayed(e.Replay)
		return out
	}
	if err != nil {
		out.err = err
		return out
	}
	time.Sleep(50 * time.Millisecond)
	out.ran, out.body = true, body
	out.report, out.err = c.Settle(ctx, delivered(body))
	return out
}
