package payments

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// facilitatorStub answers /verify and /settle with the given status and body,
// and keeps the last request bodies.
type facilitatorStub struct {
	verifyStatus, settleStatus int
	verifyBody, settleBody     string
	delay                      time.Duration
	lastVerify, lastSettle     []byte
	settles                    atomic.Int32
}

func (f *facilitatorStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
	}
	switch r.URL.Path {
	case "/facilitator/verify":
		f.lastVerify = body
		w.WriteHeader(f.verifyStatus)
		io.WriteString(w, f.verifyBody)
	case "/facilitator/settle":
		f.lastSettle = body
		f.settles.Add(1)
		w.WriteHeader(f.settleStatus)
		io.WriteString(w, f.settleBody)
	default:
		http.NotFound(w, r)
	}
}

func newStub(t *testing.T) (*facilitatorStub, *facilitatorSettler) {
	t.Helper()
	stub := &facilitatorStub{
		verifyStatus: 200, verifyBody: `{"isValid":true,"payer":"0x1"}`,
		settleStatus: 200, settleBody: `{"success":true,"transaction":"0xfeed","network":"eip155:84532","payer":"0x1"}`,
	}
	srv := httptest.NewServer(stub)
	t.Cleanup(srv.Close)
	return stub, newFacilitatorSettler(facilitatorConfig{URL: srv.URL + "/facilitator/", VerifyTimeout: time.Second, SettleTimeout: time.Second})
}

// verifiedPayment returns a verified payment sent in header name.
func verifiedPayment(t *testing.T, v1 bool) (*x402.Payment, x402.PaymentPayload) {
	t.Helper()
	req := testRequirements(t)
	pp := x402test.Payload(t, x402test.Key(t), req, nil)
	h := x402test.Header(t, x402.HeaderPaymentSignature, pp)
	if v1 {
		h = x402test.Header(t, x402.HeaderXPayment, x402test.V1Of(pp))
	}
	p := x402test.Decode(t, h)
	if err := x402.Verify(req, p, x402test.Now); err != nil {
		t.Fatal(err)
	}
	return p, pp
}

func TestFacilitatorRequestBody(t *testing.T) {
	ctx := context.Background()
	for _, v1 := range []bool{false, true} {
		stub, f := newStub(t)
		p, pp := verifiedPayment(t, v1)
		if err := f.Check(ctx, p); err != nil {
			t.Fatal(err)
		}
		tx, err := f.Settle(ctx, p)
		if err != nil || tx != "0xfeed" {
			t.Fatalf("Settle = %q, %v", tx, err)
		}
		for _, body := range [][]byte{stub.lastVerify, stub.lastSettle} {
			var got struct {
				X402Version         int               `json:"x402Version"`
				PaymentPayload      json.RawMessage   `json:"paymentPayload"`
				PaymentRequirements x402.Requirements `json:"paymentRequirements"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got.X402Version != 2 || got.PaymentRequirements != testRequirements(t) {
				t.Fatalf("request %s", body)
			}
			if want, _ := json.Marshal(facilitatorPayload(p)); string(got.PaymentPayload) != string(want) {
				t.Fatalf("payload not the canonical encoding:\n got %s\nwant %s", got.PaymentPayload, want)
			}
			var payload x402.PaymentPayload
			if err := json.Unmarshal(got.PaymentPayload, &payload); err != nil {
				t.Fatal(err)
			}
			if payload.X402Version != 2 || payload.Payload != pp.Payload || payload.Accepted != testRequirements(t) {
				t.Fatalf("payload %+v", payload)
			}
		}
	}
}

func TestFacilitatorRefusals(t *testing.T) {
	ctx := context.Background()
	stub, f := newStub(t)
	p, _ := verifiedPayment(t, false)

	stub.verifyStatus, stub.verifyBody = 400, `{"isValid":false,"invalidReason":"insufficient_funds","payer":"0x1"}`
	err := f.Check(ctx, p)
	if x402.RejectReason(err, "") != x402.ReasonInsufficientFunds {
		t.Fatalf("Check = %v, want insufficient_funds", err)
	}

	stub.settleStatus, stub.settleBody = 200, `{"success":false,"errorReason":"invalid_exact_evm_nonce_already_used","transaction":"","network":"eip155:84532"}`
	if _, err := f.Settle(ctx, p); x402.RejectReason(err, "") != x402.ReasonNonceUsed {
		t.Fatalf("Settle = %v, want nonce used", err)
	}

	for name, answer := range map[string]struct {
		status int
		body   string
	}{
		"html 502":        {502, "<html>bad gateway</html>"},
		"500 json":        {500, `{"error":"internal"}`},
		"no reason":       {200, `{"isValid":false}`},
		"not json at 200": {200, "ok"},
	} {
		stub.verifyStatus, stub.verifyBody = answer.status, answer.body
		err := f.Check(ctx, p)
		if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !namesURLInCauseOnly(err, f.url, "/verify") {
			t.Errorf("%s: Check = %v, want CodeUnavailable naming the URL", name, err)
		}
	}
}

func TestFacilitatorUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	f := newFacilitatorSettler(facilitatorConfig{URL: url})
	p, _ := verifiedPayment(t, false)
	err := f.Check(context.Background(), p)
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !namesURLInCauseOnly(err, url, "/verify") {
		t.Fatalf("Check = %v, want CodeUnavailable naming %s", err, url)
	}
	if _, err := f.NonceUsed(context.Background(), p.Transfer.From, p.Transfer.Nonce); !errors.Is(err, errNonceStateUnknown) {
		t.Fatalf("NonceUsed = %v, want errNonceStateUnknown", err)
	}
}

func TestFacilitatorTimeout(t *testing.T) {
	stub, _ := newStub(t)
	stub.delay = time.Second
	srv := httptest.NewServer(stub)
	defer srv.Close()
	f := newFacilitatorSettler(facilitatorConfig{URL: srv.URL + "/facilitator", VerifyTimeout: 50 * time.Millisecond, SettleTimeout: 50 * time.Millisecond})
	p, _ := verifiedPayment(t, false)
	start := time.Now()
	err := f.Check(context.Background(), p)
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(err.Error(), "no answer within") {
		t.Fatalf("Check = %v, want a timeout", err)
	}
	if _, err := f.Settle(context.Background(), p); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Fatalf("Settle = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("took %s; the timeouts were 50ms", d)
	}
}

func TestGateWithFacilitatorSettlesOnce(t *testing.T) {
	ctx := context.Background()
	stub, f := newStub(t)
	g, _ := newTestGate(t, f)
	c, err := begin(g, ctx, paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), nil))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); err != nil {
		t.Fatal(err)
	}
	c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}})
	c.Release(ctx)
	if n := stub.settles.Load(); n != 1 {
		t.Fatalf("facilitator /settle called %d times, want 1", n)
	}
}

// namesURLInCauseOnly reports whether err's message (shown to callers)
// names the facilitator's path but not its URL, while its cause (logged)
// names the URL.
func namesURLInCauseOnly(err error, url, path string) bool {
	msg := sandboxd.ErrorMessage(err)
	return strings.Contains(msg, path) && !strings.Contains(msg, url) && strings.Contains(err.Error(), url)
}
