package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/internal/slots"
)

// waitUntil polls cond for up to 5 s and fails the test when it stays false.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestHangUpMidRunIsStillPaid: a caller who hangs up once
// the run started does not get the payment released (which would let the
// same authorization buy another run): the run completes and is settled.
func TestHangUpMidRunIsStillPaid(t *testing.T) {
	runner := &fakeRunner{block: make(chan struct{}), result: sandboxd.Result{Status: sandboxd.StatusOK}}
	gate := &fakeGate{}
	h := newTestServer(runner, gate).Handler()
	ctx, hangUp := context.WithCancel(context.Background())
	req := httptest.NewRequest("POST", "/v1/code", strings.NewReader(`{"code":"x"}`)).WithContext(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}()
	waitUntil(t, "the run started", func() bool { return runner.ran() == 1 })
	hangUp()
	time.Sleep(50 * time.Millisecond) // a run that followed the caller's context would end here
	close(runner.block)
	<-done
	if s, r := gate.count(&gate.settled), gate.count(&gate.released); s != 1 || r != 0 {
		t.Fatalf("after a hang-up mid-run: settled %d, released %d; want settled once, never released", s, r)
	}
}

// TestPaymentCheckHoldsNoSandbox: a payment being checked (a slow
// facilitator) holds no sandbox slot, so another caller runs meanwhile.
func TestPaymentCheckHoldsNoSandbox(t *testing.T) {
	runner := &fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusOK}}
	slow := &fakeGate{checkBlock: make(chan struct{})}
	srv := newTestServer(runner, slow) // one slot, no queue
	h := srv.Handler()
	done := make(chan int)
	go func() { done <- do(t, h, "POST", "/v1/code", `{"code":"x"}`).Code }()
	waitUntil(t, "the first payment is being checked", func() bool { return slow.count(&slow.checked) == 1 })

	fast := &fakeGate{}
	srv2 := newTestServer(runner, fast)
	srv2.Admitter = srv.Admitter // the same sandboxes
	if rec := do(t, srv2.Handler(), "POST", "/v1/code", `{"code":"x"}`); rec.Code != 200 {
		t.Fatalf("while another payment is checked: status %d (%s), want 200", rec.Code, rec.Body)
	}
	close(slow.checkBlock)
	if code := <-done; code != 200 {
		t.Fatalf("the slowly checked request: %d", code)
	}
}

// TestBusyReservesNothing: a request refused for capacity (429)
// was checked but never reserved nor charged.
func TestBusyReservesNothing(t *testing.T) {
	runner := &fakeRunner{block: make(chan struct{}), result: sandboxd.Result{Status: sandboxd.StatusOK}}
	gate := &fakeGate{}
	srv := newTestServer(runner, gate)
	srv.Admitter = slots.New(1, 0)
	h := srv.Handler()
	done := make(chan int)
	go func() { done <- do(t, h, "POST", "/v1/code", `{"code":"x"}`).Code }()
	waitUntil(t, "the first run started", func() bool { return runner.ran() == 1 })
	rec := do(t, h, "POST", "/v1/code", `{"code":"x"}`)
	if rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("over capacity: %d %s", rec.Code, rec.Body)
	}
	if c, r := gate.count(&gate.checked), gate.count(&gate.reserved); c != 2 || r != 1 {
		t.Fatalf("checked %d, reserved %d; want both checked, one reserved", c, r)
	}
	close(runner.block)
	<-done
}

// TestPendingSettlementAnswers202: a settlement whose outcome is
// unknown is answered 202 with its transaction and a PAYMENT-RESPONSE
// saying settlement_pending, never 402, and without the result.
func TestPendingSettlementAnswers202(t *testing.T) {
	tx := "0x" + strings.Repeat("ab", 32)
	pending := &sandboxd.Error{Code: sandboxd.CodePending, Message: "settlement pending; do not pay again",
		Payment: &sandboxd.PaymentDetails{Settlement: &sandboxd.Settlement{Version: 2, ErrorReason: "settlement_pending", Transaction: tx}}}
	report := base64.StdEncoding.EncodeToString([]byte(`{"success":false,"errorReason":"settlement_pending","transaction":"` + tx + `","network":""}`))
	runner := &fakeRunner{result: sandboxd.Result{Stdout: "secret result", Status: sandboxd.StatusOK}}
	rec := do(t, newTestServer(runner, &fakeGate{settleErr: pending}).Handler(), "POST", "/v1/code", `{"code":"x"}`)
	if rec.Code != http.StatusAccepted || rec.Header().Get("Payment-Response") != report || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("status %d, PAYMENT-RESPONSE %q; want 202 with it", rec.Code, rec.Header().Get("Payment-Response"))
	}
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["transaction"] != tx || body["status"] != "settlement_pending" ||
		body["error"] != "settlement pending; do not pay again" || len(body) != 3 {
		t.Fatalf("body %s (%v)", rec.Body, err)
	}
	if strings.Contains(rec.Body.String(), "secret result") {
		t.Fatalf("the result was delivered unpaid: %s", rec.Body)
	}
}

// TestSlotHeldUntilTheSandboxIsGone: a killed run is answered before its
// container has stopped (Result.Gone still open), but its sandbox slot is
// held until then, so the containers that run at once stay within the
// admission limit.
func TestSlotHeldUntilTheSandboxIsGone(t *testing.T) {
	gone := make(chan struct{})
	runner := &fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusTimeout, Gone: gone}}
	h := newTestServer(runner, &fakeGate{}).Handler() // one slot, no queue
	if rec := do(t, h, "POST", "/v1/code", `{"code":"x"}`); rec.Code != 200 {
		t.Fatalf("the killed run: %d %s, want 200 before its removal", rec.Code, rec.Body)
	}
	if rec := do(t, h, "POST", "/v1/code", `{"code":"x"}`); rec.Code != 429 {
		t.Fatalf("while the first sandbox is still there: %d, want 429", rec.Code)
	}
	close(gone)
	waitUntil(t, "the slot is free once the sandbox is gone", func() bool {
		return do(t, h, "POST", "/v1/code", `{"code":"x"}`).Code == 200
	})
}
