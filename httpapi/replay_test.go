package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/httpapi/mcptools"
	"sandboxd/httpapi/wire"
	"sandboxd/x402"
)

// doPaid is do with a PAYMENT-SIGNATURE header (the fake gates never
// decode it).
func doPaid(t *testing.T, h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set(x402.HeaderPaymentSignature, "x")
	return doRequest(h, req)
}

// settlementHeader is the PAYMENT-RESPONSE value of s.
func settlementHeader(t *testing.T, s *sandboxd.Settlement) string {
	t.Helper()
	h := http.Header{}
	addSettlement(h, s)
	return h.Get(x402.HeaderPaymentResponse)
}

// TestReplayWritesTheStoredAnswer: a retry the gate recognises (a Replay
// from Check, an error carrying one from Check, or Reserve losing the race
// to the first request) is answered the stored status and bytes, byte for
// byte, with the original PAYMENT-RESPONSE, no-store, Idempotent-Replayed
// and the replay phase in Server-Timing; nothing runs, nothing is settled
// or released, and the slot is given back.
func TestReplayWritesTheStoredAnswer(t *testing.T) {
	for _, how := range []string{replayFromCheck, replayInCheckError, replayInReserve} {
		t.Run(how, func(t *testing.T) {
			runner := &fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusOK}}
			gate := &replayGate{fakeGate: &fakeGate{}, r: &fakeReplay{by: sandboxd.ReplayByID, ans: storedRun()}, how: how}
			srv := newTestServer(runner, gate.fakeGate)
			srv.Gate = gate
			h := srv.Handler()
			rec := doPaid(t, h, "POST", "/v1/code", `{"code":"print(1)"}`)
			if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), gate.r.ans.Body) {
				t.Fatalf("%d %q, want the stored bytes", rec.Code, rec.Body)
			}
			hdr := rec.Header()
			if hdr.Get(x402.HeaderPaymentResponse) != settlementHeader(t, fakeSettlement()) || hdr.Get("Cache-Control") != "no-store" ||
				hdr.Get(x402.HeaderIdempotentReplayed) != "true" || hdr.Get("Content-Type") != "application/json" ||
				!strings.Contains(hdr.Get(headerServerTiming), "replay;dur=") {
				t.Errorf("headers %v", hdr)
			}
			if runner.ran() != 0 || gate.count(&gate.settled) != 0 || gate.count(&gate.released) != 0 || gate.r.times() != 1 {
				t.Errorf("ran %d, settled %d, released %d, answered %d", runner.ran(), gate.settled, gate.released, gate.r.times())
			}
			gate.how = replayOnProbe // the next request is a new one
			if rec := doPaid(t, h, "POST", "/v1/code", `{"code":"print(1)"}`); rec.Code != 200 || runner.ran() != 1 ||
				rec.Header().Get(x402.HeaderIdempotentReplayed) != "" {
				t.Errorf("a new request after the replay: %d %s (ran %d)", rec.Code, rec.Body, runner.ran())
			}
		})
	}
}

// TestReplayRefusals: what a stored answer cannot give is answered as the
// design says: 410 with the original report (not kept), 202 pending, 409
// with Retry-After (not delivered, or still running), 429; 410 and 202
// are marked replayed, the 409s and 429 are not.
func TestReplayRefusals(t *testing.T) {
	gone := &sandboxd.Error{Code: sandboxd.CodeGone, Message: "this payment bought an answer that was not kept",
		Payment: &sandboxd.PaymentDetails{Settlement: fakeSettlement()}}
	pendingReport := &sandboxd.Settlement{Version: 2, ErrorReason: "settlement_pending", Transaction: "0xpending",
		Network: "eip155:84532", Payer: fakePayer}
	pending := &sandboxd.Error{Code: sandboxd.CodePending, Message: "still pending",
		Payment: &sandboxd.PaymentDetails{Settlement: pendingReport}}
	notDelivered := &sandboxd.Error{Code: sandboxd.CodeConflict, Message: "not delivered", RetryAfter: time.Second}
	running := &sandboxd.Error{Code: sandboxd.CodeConflict, Message: "still being answered", RetryAfter: 2 * time.Second}
	busy := &sandboxd.Error{Code: sandboxd.CodeBusy, Message: "too many", RetryAfter: time.Second}
	for _, c := range []struct {
		name       string
		err        error
		status     int
		replayed   bool
		retryAfter string
		report     *sandboxd.Settlement
		says       string
	}{
		{"gone", gone, http.StatusGone, true, "", fakeSettlement(), "not kept"},
		{"pending", pending, http.StatusAccepted, true, "", pendingReport, `"status":"settlement_pending"`},
		{"not delivered", notDelivered, http.StatusConflict, false, "1", nil, "not delivered"},
		{"still running", running, http.StatusConflict, false, "2", nil, "still being answered"},
		{"busy", busy, http.StatusTooManyRequests, false, "1", nil, "too many"},
	} {
		t.Run(c.name, func(t *testing.T) {
			gate := &replayGate{fakeGate: &fakeGate{}, r: &fakeReplay{by: sandboxd.ReplayByPayment, err: c.err}, how: replayFromCheck}
			srv := newTestServer(&fakeRunner{}, gate.fakeGate)
			srv.Gate = gate
			rec := doPaid(t, srv.Handler(), "POST", "/v1/code", `{"code":"print(1)"}`)
			hdr := rec.Header()
			if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.says) {
				t.Fatalf("%d %s, want %d saying %s", rec.Code, rec.Body, c.status, c.says)
			}
			if (hdr.Get(x402.HeaderIdempotentReplayed) == "true") != c.replayed || hdr.Get("Retry-After") != c.retryAfter {
				t.Errorf("replayed %q, Retry-After %q", hdr.Get(x402.HeaderIdempotentReplayed), hdr.Get("Retry-After"))
			}
			want := ""
			if c.report != nil {
				want = settlementHeader(t, c.report)
			}
			if hdr.Get(x402.HeaderPaymentResponse) != want || hdr.Get(x402.HeaderPaymentRequired) != "" {
				t.Errorf("PAYMENT-RESPONSE %q, want %q; PAYMENT-REQUIRED %q", hdr.Get(x402.HeaderPaymentResponse), want,
					hdr.Get(x402.HeaderPaymentRequired))
			}
		})
	}
}

// TestRetryIDConflict: a payment id the payer used for another request is
// a 409 that says so, with no payment headers (paying again would not
// help); nothing is reserved or run. Over MCP: the tool error "409
// Conflict: …".
func TestRetryIDConflict(t *testing.T) {
	conflict := sandboxd.Errorf(sandboxd.CodeConflict, "fake.check", "payment id pay_7d5d… was already used by this "+
		"payer for another request (another route or body); use a new id for a new request. Nothing was reserved or "+
		"charged for this one.")
	runner := &fakeRunner{}
	gate := &fakeGate{checkErr: conflict}
	srv := newTestServer(runner, gate)
	srv.Retries = true
	rec := doPaid(t, srv.Handler(), "POST", "/v1/code", `{"code":"print(1)"}`)
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "already used by this payer for another request") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	for _, name := range []string{x402.HeaderPaymentRequired, x402.HeaderPaymentResponse, x402.HeaderIdempotentReplayed, "Retry-After"} {
		if v := rec.Header().Get(name); v != "" {
			t.Errorf("%s: %q", name, v)
		}
	}
	res := callTool(t, mustMCP(t, srv), map[string]any{"code": "print(1)"}, paymentMeta())
	if !res.IsError || !strings.HasPrefix(text(t, res), "409 Conflict: payment id pay_7d5d") || res.Meta[mcptools.MetaReplayed] != nil {
		t.Errorf("MCP: %v %s", res.IsError, text(t, res))
	}
	if runner.ran() != 0 || gate.count(&gate.reserved) != 0 {
		t.Errorf("ran %d, reserved %d", runner.ran(), gate.reserved)
	}
}

// paymentMeta is an MCP call's _meta with a PaymentPayload (the fake
// gates never decode it).
func paymentMeta() map[string]any {
	return map[string]any{mcptools.MetaPayment: map[string]any{"x402Version": 2, "payload": map[string]any{"signature": "0x00"}}}
}

// TestDeliveredIsWhatIsWritten: the answer handed to Settle (kept for a
// replay) is the status and the very bytes then written, on every paid
// route; over MCP, the structuredContent.
func TestDeliveredIsWhatIsWritten(t *testing.T) {
	engine := &fakeSessionEngine{result: sandboxd.SessionResult{Result: sandboxd.Result{Stdout: "<b>&</b>", Status: sandboxd.StatusOK}}}
	gate := &fakeGate{}
	srv := newSessionServer(t, engine, gate, sessionsConfig())
	srv.Runner = &fakeRunner{result: sandboxd.Result{Stdout: "<b>&</b>\n", Status: sandboxd.StatusOK}}
	h := srv.Handler()
	last := func() sandboxd.Delivered {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		return gate.delivered[len(gate.delivered)-1]
	}
	rec := do(t, h, "POST", "/v1/code", `{"code":"print(1)"}`)
	if d := last(); rec.Code != 200 || d.Status != 200 || !bytes.Equal(d.Body, rec.Body.Bytes()) || d.Result.Stdout != "<b>&</b>\n" {
		t.Errorf("run: wrote %d %q, delivered %d %q", rec.Code, rec.Body, d.Status, d.Body)
	}
	open := do(t, h, "POST", "/v1/sessions", "")
	if d := last(); open.Code != 201 || d.Status != 201 || !bytes.Equal(d.Body, open.Body.Bytes()) {
		t.Errorf("open: wrote %d %q, delivered %d %q", open.Code, open.Body, d.Status, d.Body)
	}
	var opened wire.SessionResponse
	decodeRec(t, open, &opened)
	rec = do(t, h, "POST", "/v1/sessions/"+opened.SessionID+"/code", `{"code":"1"}`)
	if d := last(); rec.Code != 200 || d.Status != 200 || !bytes.Equal(d.Body, rec.Body.Bytes()) {
		t.Errorf("call: wrote %d %q, delivered %d %q", rec.Code, rec.Body, d.Status, d.Body)
	}
	res := callTool(t, mustMCP(t, srv), map[string]any{"code": "print(1)"}, nil)
	var kept map[string]any
	if err := json.Unmarshal(last().Body, &kept); err != nil || res.IsError || !sameJSON(structured(t, res), kept) {
		t.Errorf("MCP: structuredContent %v, delivered %s (%v)", res.StructuredContent, last().Body, err)
	}
}
