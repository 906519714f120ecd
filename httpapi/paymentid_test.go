package httpapi

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"sandboxd"
	"sandboxd/httpapi/mcptools"
	"sandboxd/x402"
)

// TestPaymentIdentifierDeclared: with retries on, every paid route's 402
// (HTTP and MCP) declares payment-identifier beside bazaar, equal to the
// official declaration, and so does what the gate is handed (a
// facilitator's copy); with retries off, none does.
func TestPaymentIdentifierDeclared(t *testing.T) {
	var want any // deep-equal, as the interop test compares it with the official package's
	raw, _ := json.Marshal(x402.PaymentIdentifierDeclaration())
	_ = json.Unmarshal(raw, &want)
	for _, on := range []bool{true, false} {
		payErr := &sandboxd.Error{Code: sandboxd.CodePayment, Message: "payment required",
			Payment: termsDetails(map[string]any{"x402Version": 2, "accepts": []any{}}, nil)}
		gate := &fakeGate{checkErr: payErr}
		srv := newSessionServer(t, &fakeSessionEngine{}, gate, sessionsConfig())
		srv.Retries = on
		declared := func(what string, terms map[string]any) {
			t.Helper()
			bazaarOf(t, terms)
			ext, _ := terms["extensions"].(map[string]any)
			got := ext[x402.ExtensionPaymentIdentifier]
			if on && !sameJSON(got, want) || !on && got != nil {
				t.Errorf("retries %v, %s: payment-identifier %v", on, what, got)
			}
			req := gate.lastRequest()
			if _, ok := req.Extensions[x402.ExtensionPaymentIdentifier]; ok != on {
				t.Errorf("retries %v, %s: the gate was handed %v", on, what, req.Extensions)
			}
		}
		h := srv.Handler()
		open := newSessionServer(t, &fakeSessionEngine{}, &fakeGate{}, sessionsConfig())
		id := mustOpenSession(t, open).SessionID
		srv.Sessions = open.Sessions
		for _, path := range []string{"/v1/code", "/v1/sessions", "/v1/sessions/" + id + "/code"} {
			rec := do(t, h, "POST", path, `{"code":"1"}`)
			if path == "/v1/sessions" {
				rec = do(t, h, "POST", path, "")
			}
			declared(path, headerObject(rec.Header(), x402.HeaderPaymentRequired))
		}
		cs := mustMCP(t, srv)
		declared("run_python", structured(t, callTool(t, cs, map[string]any{"code": "1"}, nil)))
		declared("run_python in a session", structured(t, callTool(t, cs, map[string]any{"code": "1", "session_id": id}, nil)))
		declared("open_session", structured(t, callNamed(t, cs, mcptools.OpenToolName, map[string]any{}, nil)))
	}
}

// TestUnknownIDsNoLedger: a flood of paid calls with random payment ids
// and signatures that do not verify costs what unpaid calls cost: one
// Check each (where the gate refuses them before any lookup), nothing
// reserved, nothing run, nothing waited on; calls to sessions that do not
// exist are not even checked with retries off.
func TestUnknownIDsNoLedger(t *testing.T) {
	payErr := &sandboxd.Error{Code: sandboxd.CodePayment, Message: "invalid_exact_evm_payload_signature",
		Payment: termsDetails(map[string]any{"x402Version": 2, "accepts": []any{}}, nil)}
	runner := &fakeRunner{}
	gate := &fakeGate{checkErr: payErr}
	srv := newSessionServer(t, &fakeSessionEngine{}, gate, sessionsConfig())
	srv.Runner, srv.Retries = runner, true
	h := srv.Handler()
	const n = 2000
	for i := range n {
		req := httptest.NewRequest("POST", "/v1/code", strings.NewReader(`{"code":"1"}`))
		req.Header.Set(x402.HeaderPaymentSignature, randomIDPayment(t))
		rec := doRequest(h, req)
		if rec.Code != http.StatusPaymentRequired || rec.Header().Get(x402.HeaderIdempotentReplayed) != "" {
			t.Fatalf("request %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if c, r := gate.count(&gate.checked), gate.count(&gate.reserved); c != n || r != 0 || runner.ran() != 0 {
		t.Errorf("checked %d, reserved %d, ran %d", c, r, runner.ran())
	}
	srv.Retries = false
	for range 100 {
		req := httptest.NewRequest("POST", "/v1/sessions/"+endedID+"/code", strings.NewReader(`{"code":"1"}`))
		req.Header.Set(x402.HeaderPaymentSignature, randomIDPayment(t))
		if rec := doRequest(h, req); rec.Code != http.StatusNotFound {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	if c := gate.count(&gate.checked); c != n {
		t.Errorf("%d checks for sessions that do not exist", c-n)
	}
}

// randomIDPayment is a PAYMENT-SIGNATURE carrying a random payment id and
// a signature nobody made.
func randomIDPayment(t *testing.T) string {
	t.Helper()
	var b [16]byte
	_, _ = rand.Read(b[:])
	raw, err := json.Marshal(map[string]any{"x402Version": 2, "payload": map[string]any{"signature": "0x" + hex.EncodeToString(b[:])},
		"extensions": map[string]any{x402.ExtensionPaymentIdentifier: map[string]any{"info": map[string]any{"required": false,
			"id": "pay_" + hex.EncodeToString(b[:])}}}})
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// TestOpenAPIDocumentsRetries: every paid route documents the answers of
// its retries (202, 409, 410) and the replayed header.
func TestOpenAPIDocumentsRetries(t *testing.T) {
	srv := newSessionServer(t, &fakeSessionEngine{}, &fakeGate{}, sessionsConfig())
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	decodeRec(t, do(t, srv.Handler(), "GET", "/v1/openapi.json", ""), &doc)
	for path, success := range map[string]string{"/v1/code": "200", "/v1/sessions": "201", "/v1/sessions/{id}/code": "200"} {
		replies := doc.Paths[path]["post"].Responses
		for _, status := range []string{"202", "409", "410"} {
			if replies[status] == nil {
				t.Errorf("%s lacks %s", path, status)
			}
		}
		if !strings.Contains(string(replies[success]), x402.HeaderIdempotentReplayed) || !strings.Contains(string(replies["410"]), x402.HeaderIdempotentReplayed) {
			t.Errorf("%s: %s and 410 lack %s", path, success, x402.HeaderIdempotentReplayed)
		}
	}
}
