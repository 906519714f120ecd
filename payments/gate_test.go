package payments

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

const testResource = "https://sandbox.example/v1/code"

// fakeSettler records its calls and answers as told.
type fakeSettler struct {
	mu        sync.Mutex
	calls     []string
	onCheck   func(*x402.Payment)
	onSettle  func(*x402.Payment)
	checkErr  error
	settleErr error
	settleTx  string
	settles   atomic.Int32
}

func (f *fakeSettler) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeSettler) Check(_ context.Context, p *x402.Payment) error {
	f.record("check")
	if f.onCheck != nil {
		f.onCheck(p)
	}
	return f.checkErr
}

func (f *fakeSettler) Settle(_ context.Context, p *x402.Payment) (string, error) {
	f.record("settle")
	f.settles.Add(1)
	if f.onSettle != nil {
		f.onSettle(p)
	}
	return f.settleTx, f.settleErr
}

func (f *fakeSettler) NonceUsed(context.Context, common.Address, [32]byte) (bool, error) {
	return false, errNonceStateUnknown
}

// newTestGate returns a gate at x402test.Now over a fresh ledger and s.
func newTestGate(tb testing.TB, s Settler) (*Gate, *ledger.SQL) {
	tb.Helper()
	return newTestGateAt(tb, s, testConfig(tb).Ledger)
}

// newTestGateAt is newTestGate over the SQLite ledger at path.
func newTestGateAt(tb testing.TB, s Settler, path string) (*Gate, *ledger.SQL) {
	tb.Helper()
	cfg := testConfig(tb)
	cfg.Ledger = path
	l := ledgertest.OpenFile(tb, cfg.Ledger)
	g, err := newGateWith(cfg, options{Settler: s, Ledger: l, Now: func() time.Time { return x402test.Now }})
	if err != nil {
		tb.Fatal(err)
	}
	return g, l
}

// paidRequest is a request to testResource carrying the payment headers
// of h.
func paidRequest(h http.Header) sandboxd.PaymentRequest {
	return sandboxd.PaymentRequest{ResourceURL: testResource,
		Signature: h.Get(x402.HeaderPaymentSignature), XPayment: h.Get(x402.HeaderXPayment)}
}

// wantPaymentError asserts err is CodePayment carrying the terms, with a
// message holding each of parts.
func wantPaymentError(tb testing.TB, err error, parts ...string) *sandboxd.Error {
	tb.Helper()
	var e *sandboxd.Error
	if !errors.As(err, &e) || e.Code != sandboxd.CodePayment {
		tb.Fatalf("error %v, want CodePayment", err)
	}
	if e.Payment == nil || e.Payment.Terms == nil {
		tb.Fatal("no terms")
	}
	var v2 x402.PaymentRequired
	if err := json.Unmarshal(e.Payment.Terms.V2, &v2); err != nil || v2.X402Version != 2 {
		tb.Fatalf("v2 terms %s (%v), want a PaymentRequired", e.Payment.Terms.V2, err)
	}
	var v1 x402.PaymentRequiredV1
	if err := json.Unmarshal(e.Payment.Terms.V1, &v1); err != nil || v1.X402Version != 1 {
		tb.Fatalf("v1 terms %s (%v), want a PaymentRequiredV1", e.Payment.Terms.V1, err)
	}
	for _, part := range parts {
		if !strings.Contains(e.Message, part) {
			tb.Fatalf("message %q does not contain %q", e.Message, part)
		}
	}
	return e
}

func TestGateUnpaid(t *testing.T) {
	g, _ := newTestGate(t, &fakeSettler{})
	_, err := begin(g, context.Background(), paidRequest(http.Header{}))
	e := wantPaymentError(t, err, "payment required", "0.005 USDC")

	var v2 map[string]any
	if err := json.Unmarshal(e.Payment.Terms.V2, &v2); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"x402Version": 2.0,
		"error":       e.Message,
		"resource":    map[string]any{"url": testResource, "description": description, "mimeType": "application/json"},
		"accepts": []any{map[string]any{
			"scheme": "exact", "network": "eip155:84532", "amount": "5000", "asset": x402test.Asset,
			"payTo": x402test.PayTo, "maxTimeoutSeconds": 120.0, "extra": map[string]any{"name": "USDC", "version": "2"},
		}},
		"extensions": map[string]any{},
	}
	if got, _ := json.Marshal(v2); string(got) != mustJSON(t, want) {
		t.Fatalf("PAYMENT-REQUIRED\n got %s\nwant %s", got, mustJSON(t, want))
	}

	body := mustJSON(t, e.Payment.Terms.V1)
	wantBody := mustJSON(t, map[string]any{
		"x402Version": 1, "error": e.Message,
		"accepts": []any{map[string]any{
			"scheme": "exact", "network": "base-sepolia", "maxAmountRequired": "5000", "resource": testResource,
			"description": description, "mimeType": "application/json", "payTo": x402test.PayTo,
			"maxTimeoutSeconds": 120, "asset": x402test.Asset, "extra": map[string]any{"name": "USDC", "version": "2"},
		}},
	})
	if body != wantBody {
		t.Fatalf("v1 body\n got %s\nwant %s", body, wantBody)
	}
}

// mustJSON returns v as canonical JSON (object keys sorted).
func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		tb.Fatal(err)
	}
	b, _ = json.Marshal(generic)
	return string(b)
}

func TestGateBadHeader(t *testing.T) {
	g, _ := newTestGate(t, &fakeSettler{})
	h := http.Header{}
	h.Set(x402.HeaderPaymentSignature, "***")
	_, err := begin(g, context.Background(), paidRequest(h))
	if sandboxd.ErrorCode(err) != sandboxd.CodeInvalid {
		t.Fatalf("Begin = %v, want CodeInvalid", err)
	}
}

func TestGateRefusesBeforeCheck(t *testing.T) {
	s := &fakeSettler{}
	g, _ := newTestGate(t, s)
	pp := x402test.Payload(t, x402test.Key(t), g.Requirements(), func(a *x402.Authorization) { a.Value = "1" })
	_, err := begin(g, context.Background(), paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, pp)))
	wantPaymentError(t, err, "payment refused", x402.ReasonValueMismatch)
	if len(s.calls) != 0 {
		t.Fatalf("settler called (%v) for a payment that failed verification", s.calls)
	}
}

func TestGateOrder(t *testing.T) {
	ctx := context.Background()
	s := &fakeSettler{}
	g, l := newTestGate(t, s)
	s.onCheck = func(p *x402.Payment) {
		// Verified before the check, reserved after it.
		if p.Transfer == nil {
			t.Error("Check called before Verify")
			return
		}
		if _, err := l.Get(ctx, p.Transfer.Payer(), p.Transfer.NonceHex()); err == nil {
			t.Error("reserved before Check")
		}
	}
	key := x402test.Key(t)
	pp := x402test.Payload(t, key, g.Requirements(), nil)
	c, err := begin(g, ctx, paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, pp)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release(ctx)
	e := ledger.Entry{Payer: crypto.PubkeyToAddress(key.PublicKey).Hex(), Nonce: pp.Payload.Authorization.Nonce}
	ledgertest.WantStatus(t, l, e, ledger.StatusReserved)
	if strings.Join(s.calls, ",") != "check" {
		t.Fatalf("calls %v, want [check]", s.calls)
	}
}

func TestGateCheckFailures(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		err  error
		code sandboxd.Code
	}{
		{"nonce used", x402.Reject(x402.ReasonNonceUsed, "used on chain"), sandboxd.CodePayment},
		{"insufficient funds", x402.Reject(x402.ReasonInsufficientFunds, "balance short"), sandboxd.CodePayment},
		{"chain down", sandboxd.Errorf(sandboxd.CodeUnavailable, "chain", "down"), sandboxd.CodeUnavailable},
		{"other", errors.New("boom"), sandboxd.CodeUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &fakeSettler{checkErr: tt.err}
			g, l := newTestGate(t, s)
			key := x402test.Key(t)
			pp := x402test.Payload(t, key, g.Requirements(), nil)
			_, err := begin(g, ctx, paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, pp)))
			if code := sandboxd.ErrorCode(err); code != tt.code {
				t.Fatalf("code %s (%v), want %s", code, err, tt.code)
			}
			if tt.code == sandboxd.CodePayment {
				wantPaymentError(t, err, x402.RejectReason(tt.err, "?"))
			}
			if _, err := l.Get(ctx, crypto.PubkeyToAddress(key.PublicKey).Hex(), pp.Payload.Authorization.Nonce); err == nil {
				t.Fatal("a refused payment was reserved")
			}
		})
	}
}

func TestGateSettle(t *testing.T) {
	ctx := context.Background()
	for _, version := range []int{1, 2} {
		t.Run(map[int]string{1: "v1", 2: "v2"}[version], func(t *testing.T) {
			s := &fakeSettler{settleTx: "0xabc"}
			g, l := newTestGate(t, s)
			key := x402test.Key(t)
			pp := x402test.Payload(t, key, g.Requirements(), nil)
			h, respHeader, network := x402test.Header(t, x402.HeaderPaymentSignature, pp), x402.HeaderPaymentResponse, "eip155:84532"
			if version == 1 {
				h, respHeader, network = x402test.Header(t, x402.HeaderXPayment, x402test.V1Of(pp)), x402.HeaderXPaymentResponse, "base-sepolia"
			}
			c, err := begin(g, ctx, paidRequest(h))
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusError}})
			if err != nil {
				t.Fatal(err)
			}
			name, sr := report(t, out)
			if name != respHeader {
				t.Fatalf("report in %s, want %s", name, respHeader)
			}
			payer := crypto.PubkeyToAddress(key.PublicKey).Hex()
			if !reflect.DeepEqual(sr, x402.SettleResponse{Success: true, Transaction: "0xabc", Network: network, Payer: payer}) {
				t.Fatalf("settle response %+v", sr)
			}
			row := ledgertest.WantStatus(t, l, ledger.Entry{Payer: payer, Nonce: pp.Payload.Authorization.Nonce}, ledger.StatusSettled)
			if row.TxHash != "0xabc" || row.RunStatus != "error" {
				t.Fatalf("row %+v", row)
			}
		})
	}
}

func TestGateSettleFailure(t *testing.T) {
	ctx := context.Background()
	s := &fakeSettler{settleErr: x402.Reject(x402.ReasonInsufficientFunds, "balance short"), settleTx: ""}
	g, l := newTestGate(t, s)
	key := x402test.Key(t)
	pp := x402test.Payload(t, key, g.Requirements(), nil)
	h := x402test.Header(t, x402.HeaderPaymentSignature, pp)
	c, err := begin(g, ctx, paidRequest(h))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}})
	if out != nil {
		t.Fatalf("settlement %+v on a failed settlement", out)
	}
	e := wantPaymentError(t, err, "could not be settled", x402.ReasonInsufficientFunds)
	sr := errReport(t, e)
	if sr.Success || sr.ErrorReason != x402.ReasonInsufficientFunds || sr.Network != "eip155:84532" {
		t.Fatalf("settle response %+v", sr)
	}
	row := ledgertest.WantStatus(t, l, ledger.Entry{Payer: crypto.PubkeyToAddress(key.PublicKey).Hex(), Nonce: pp.Payload.Authorization.Nonce}, ledger.StatusFailed)
	if row.Reason != x402.ReasonInsufficientFunds {
		t.Fatalf("row %+v", row)
	}
	// A payment whose settlement failed is not admitted again.
	_, err = begin(g, ctx, paidRequest(h))
	wantPaymentError(t, err, "already used", x402.ReasonNonceUsed)

	// An outage after the settlement may have left is pending, not a
	// refusal: the payer must not be told to pay again.
	s.settleErr = sandboxd.Errorf(sandboxd.CodeUnavailable, "chain", "the chain is down")
	s.settleTx = "0x" + strings.Repeat("ab", 32)
	pp = x402test.Payload(t, key, g.Requirements(), nil)
	h = x402test.Header(t, x402.HeaderPaymentSignature, pp)
	c, err = begin(g, ctx, paidRequest(h))
	if err != nil {
		t.Fatal(err)
	}
	out, err = c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}})
	entry := ledger.Entry{Payer: pp.Payload.Authorization.From, Nonce: pp.Payload.Authorization.Nonce}
	wantPending(t, l, entry, out, err, s.settleTx)
	_, err = begin(g, ctx, paidRequest(h))
	wantPaymentError(t, err, "already used", x402.ReasonNonceUsed)
}

func TestGateReleaseAllowsRetry(t *testing.T) {
	ctx := context.Background()
	s := &fakeSettler{settleTx: "0x1"}
	g, l := newTestGate(t, s)
	key := x402test.Key(t)
	pp := x402test.Payload(t, key, g.Requirements(), nil)
	h := x402test.Header(t, x402.HeaderPaymentSignature, pp)
	c, err := begin(g, ctx, paidRequest(h))
	if err != nil {
		t.Fatal(err)
	}
	c.Release(ctx)
	e := ledger.Entry{Payer: crypto.PubkeyToAddress(key.PublicKey).Hex(), Nonce: pp.Payload.Authorization.Nonce}
	ledgertest.WantStatus(t, l, e, ledger.StatusReleased)
	if s.settles.Load() != 0 {
		t.Fatal("Release settled")
	}
	c, err = begin(g, ctx, paidRequest(h))
	if err != nil {
		t.Fatalf("Begin after release: %v", err)
	}
	if _, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); err != nil {
		t.Fatal(err)
	}
	ledgertest.WantStatus(t, l, e, ledger.StatusSettled)
}

func TestGateSettleOnce(t *testing.T) {
	ctx := context.Background()
	s := &fakeSettler{settleTx: "0x1"}
	g, l := newTestGate(t, s)
	key := x402test.Key(t)
	pp := x402test.Payload(t, key, g.Requirements(), nil)
	c, err := begin(g, ctx, paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, pp)))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var ok atomic.Int32
	for range 10 {
		wg.Go(func() {
			if _, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); err == nil {
				ok.Add(1)
			} else if sandboxd.ErrorCode(err) != sandboxd.CodeInternal {
				t.Errorf("second Settle = %v, want CodeInternal", err)
			}
		})
	}
	wg.Wait()
	c.Release(ctx)
	if ok.Load() != 1 || s.settles.Load() != 1 {
		t.Fatalf("%d Settle calls succeeded, settler called %d times; want 1 and 1", ok.Load(), s.settles.Load())
	}
	ledgertest.WantStatus(t, l, ledger.Entry{Payer: crypto.PubkeyToAddress(key.PublicKey).Hex(), Nonce: pp.Payload.Authorization.Nonce}, ledger.StatusSettled)
}

func TestGateDuplicatePayment(t *testing.T) {
	ctx := context.Background()
	g, _ := newTestGate(t, &fakeSettler{})
	h := x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), nil))
	var wg sync.WaitGroup
	var admitted, refused atomic.Int32
	for range 20 {
		wg.Go(func() {
			_, err := begin(g, ctx, paidRequest(h))
			switch {
			case err == nil:
				admitted.Add(1)
			case strings.Contains(sandboxd.ErrorMessage(err), "this payment was already used ("+x402.ReasonNonceUsed+")"):
				refused.Add(1)
				wantPaymentError(t, err)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if admitted.Load() != 1 || refused.Load() != 19 {
		t.Fatalf("%d admitted, %d refused; want 1 and 19", admitted.Load(), refused.Load())
	}
}

func TestGateLedgerDown(t *testing.T) {
	g, l := newTestGate(t, &fakeSettler{})
	l.Close()
	h := x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), nil))
	_, err := begin(g, context.Background(), paidRequest(h))
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Fatalf("Begin = %v, want CodeUnavailable", err)
	}
}

func TestNewGate(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	// A crash left one payment reserved (its run in progress) and one
	// settling (its /settle sent). Under a facilitator the first is
	// released and the second failed: none stays open.
	l, err := ledger.OpenFile(ctx, cfg.Ledger)
	if err != nil {
		t.Fatal(err)
	}
	running, settling := ledgertest.Entry(1), ledgertest.Entry(2)
	for _, e := range []ledger.Entry{running, settling} {
		if err := l.Reserve(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.MarkSettling(ctx, settling.Payer, settling.Nonce, nil); err != nil {
		t.Fatal(err)
	}
	l.Close()
	g, err := NewGate(ctx, cfg, RunBounds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pending, err := g.ledger.(*ledger.SQL).Pending(ctx); err != nil || len(pending) != 0 {
		t.Fatalf("Pending = %v, %v; want none", pending, err)
	}
	ledgertest.WantStatus(t, g.ledger, running, ledger.StatusReleased)
	if row := ledgertest.WantStatus(t, g.ledger, settling, ledger.StatusFailed); row.Reason != ledger.ReasonUnknownAfterRestart {
		t.Fatalf("row %+v", row)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}

	cfg.PayTo = ""
	if _, err := NewGate(ctx, cfg, RunBounds{}, nil); err == nil || !strings.Contains(err.Error(), "payments.pay_to") {
		t.Fatalf("NewGate without pay_to = %v", err)
	}
}
