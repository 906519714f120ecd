package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/payments"
)

// refusedSettlement is a settlement refused after the run (the payer's
// wallet emptied meanwhile).
func refusedSettlement() error {
	return &sandboxd.Error{Code: sandboxd.CodePayment, Op: "test.settle", Message: "the payer's balance is too low",
		Payment: &sandboxd.PaymentDetails{Settlement: &sandboxd.Settlement{Version: 2, ErrorReason: "insufficient_funds"}}}
}

// pendingSettlement is a settlement whose outcome is not known yet.
func pendingSettlement() error {
	return &sandboxd.Error{Code: sandboxd.CodePending, Op: "test.settle", Message: "the settlement is pending; do not pay again",
		Payment: &sandboxd.PaymentDetails{Settlement: &sandboxd.Settlement{Version: 2, ErrorReason: "settlement_pending",
			Transaction: "0xpending"}}}
}

// TestUnsettledCallEndsTheSession: a call delivered but not paid for
// (its settlement refused, or pending) ends its session, so that the next
// call, however cheap, cannot read what it computed; the payment of the
// refused call is not collected.
func TestUnsettledCallEndsTheSession(t *testing.T) {
	for name, settleErr := range map[string]error{"refused": refusedSettlement(), "pending": pendingSettlement()} {
		t.Run(name, func(t *testing.T) {
			gate := &fakeGate{}
			srv := newSessionServer(t, &fakeSessionEngine{}, gate, sessionsConfig())
			h := srv.Handler()
			id := mustOpenSession(t, srv).SessionID
			gate.mu.Lock()
			gate.settleErr = settleErr
			gate.mu.Unlock()
			rec := do(t, h, "POST", "/v1/sessions/"+id+"/code", `{"code":"secret = heavy()"}`)
			if rec.Code != statusOf(sandboxd.ErrorCode(settleErr)) {
				t.Fatalf("the unsettled call answered %d %s", rec.Code, rec.Body)
			}
			gate.mu.Lock()
			gate.settleErr = nil
			gate.mu.Unlock()
			rec = do(t, h, "POST", "/v1/sessions/"+id+"/code", `{"code":"secret"}`)
			if rec.Code != 404 || !strings.Contains(rec.Body.String(), "closed") {
				t.Fatalf("the call after an unsettled one answered %d %s; want 404, the session closed", rec.Code, rec.Body)
			}
		})
	}
}

// TestTurnIsHeldUntilTheSettlement: while a call's settlement is under
// way, the session's next call waits for it (here past the queue wait:
// 409), so it cannot read the state of a call that may yet go unpaid.
func TestTurnIsHeldUntilTheSettlement(t *testing.T) {
	gate := &fakeGate{}
	srv := newSessionServer(t, &fakeSessionEngine{}, gate, sessionsConfig())
	h := srv.Handler()
	id := mustOpenSession(t, srv).SessionID
	block := make(chan struct{})
	gate.mu.Lock()
	gate.settleBlock = block
	gate.mu.Unlock()
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- do(t, h, "POST", "/v1/sessions/"+id+"/code", `{"code":"x = 1"}`) }()
	waitUntil(t, "the first call reserved", func() bool { return gate.count(&gate.reserved) == 2 })
	time.Sleep(50 * time.Millisecond) // the first call is settling now
	gate.mu.Lock()
	gate.settleBlock = nil
	gate.mu.Unlock()
	if rec := do(t, h, "POST", "/v1/sessions/"+id+"/code", `{"code":"x"}`); rec.Code != 409 {
		t.Fatalf("a call while the one before settles answered %d %s; want 409", rec.Code, rec.Body)
	}
	close(block)
	if rec := <-first; rec.Code != 200 {
		t.Fatalf("the first call answered %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, h, "POST", "/v1/sessions/"+id+"/code", `{"code":"x"}`); rec.Code != 200 {
		t.Fatalf("the call after the settlement answered %d %s", rec.Code, rec.Body)
	}
}

// TestUncheckedOpensHoldNoRoom: opens whose payments are still being
// checked (and may never verify) hold no room, so a paying caller still
// opens a session; a table full of sessions says to retry when the first
// of them is due to end, not after a whole idle timeout.
func TestUncheckedOpensHoldNoRoom(t *testing.T) {
	gate := &fakeGate{}
	cfg := sessionsConfig()
	cfg.MaxPerPayer = 0
	srv := newSessionServer(t, &fakeSessionEngine{}, gate, cfg)
	h := srv.Handler()
	block := make(chan struct{})
	gate.mu.Lock()
	gate.checkBlock = block
	gate.mu.Unlock()
	stuck := make(chan int, cfg.Max)
	for range cfg.Max {
		go func() { stuck <- do(t, h, "POST", "/v1/sessions", "").Code }()
	}
	waitUntil(t, "the opens being checked", func() bool { return gate.count(&gate.checked) == cfg.Max })
	gate.mu.Lock()
	gate.checkBlock = nil
	gate.checkErr = nil
	gate.mu.Unlock()
	mustOpenSession(t, srv)
	gate.mu.Lock()
	gate.checkErr = sandboxd.Errorf(sandboxd.CodePayment, "test.check", "insufficient_funds")
	gate.mu.Unlock()
	close(block)
	for range cfg.Max {
		if code := <-stuck; code != 402 {
			t.Fatalf("an unfunded open answered %d; want 402", code)
		}
	}
	gate.mu.Lock()
	gate.checkErr = nil
	gate.mu.Unlock()
	mustOpenSession(t, srv)
	rec := do(t, h, "POST", "/v1/sessions", "")
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "300" {
		// Both sessions were just opened: the first is due at its idle
		// timeout (5 min in sessionsConfig).
		t.Fatalf("a full table answered %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
}

// TestPendingOpeningKeepsTheSession: an opening whose settlement is pending
// keeps its session and answers 202 with its id beside the pending body.
func TestPendingOpeningKeepsTheSession(t *testing.T) {
	gate := &fakeGate{settleErr: pendingSettlement()}
	srv := newSessionServer(t, &fakeSessionEngine{}, gate, sessionsConfig())
	h := srv.Handler()
	rec := do(t, h, "POST", "/v1/sessions", "")
	var body struct {
		Status, Transaction, SessionID string
	}
	var raw map[string]any
	decodeRec(t, rec, &raw)
	body.Status, _ = raw["status"].(string)
	body.Transaction, _ = raw["transaction"].(string)
	body.SessionID, _ = raw["session_id"].(string)
	if rec.Code != 202 || body.Status != "settlement_pending" || body.Transaction != "0xpending" ||
		!strings.HasPrefix(body.SessionID, "ses_") || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("a pending opening answered %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, h, "GET", "/v1/sessions/"+body.SessionID, ""); rec.Code != 200 {
		t.Fatalf("the session of a pending opening: %d %s", rec.Code, rec.Body)
	}
}

// TestFreeSessionsPerClient: in free mode one client address holds at most
// sessions.max_per_client sessions; another address still opens.
func TestFreeSessionsPerClient(t *testing.T) {
	cfg := sessionsConfig()
	cfg.MaxPerPayer, cfg.MaxPerClient = 0, 1
	srv := newSessionServer(t, &fakeSessionEngine{}, nil, cfg)
	srv.Gate = payments.FreeGate{}
	h := srv.Handler()
	open := func(addr string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/v1/sessions", nil)
		req.RemoteAddr = addr
		return doRequest(h, req)
	}
	if rec := open("192.0.2.1:1000"); rec.Code != 201 {
		t.Fatalf("first open: %d %s", rec.Code, rec.Body)
	}
	if rec := open("192.0.2.1:1001"); rec.Code != 429 || !strings.Contains(rec.Body.String(), "this address holds 1 sessions") {
		t.Fatalf("second open from the same address: %d %s", rec.Code, rec.Body)
	}
	if rec := open("192.0.2.2:1000"); rec.Code != 201 {
		t.Fatalf("an open from another address: %d %s", rec.Code, rec.Body)
	}
}
