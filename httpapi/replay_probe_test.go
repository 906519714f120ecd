package httpapi

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
	"sandboxd/httpapi/mcptools"
	"sandboxd/x402"
)

// endedID is a session id no table holds.
const endedID = "ses_0000000000000000000000000000dead"

// storedCall is a stored answer of a call that ended its session.
func storedCall() *sandboxd.StoredAnswer {
	return &sandboxd.StoredAnswer{Kind: sandboxd.AnswerSessionCall, Status: 200, Settlement: fakeSettlement(),
		Body: []byte(`{"lang":"python","stdout":"","stderr":"","exit_code":0,"status":"ok","timed_out":false,"oom_killed":false,` +
			`"truncated":false,"duration_ms":5,"cpu_ms":null,"max_rss_kb":null,"environment":"python","files":[],` +
			`"files_truncated":false,"result":null,"session":{"session_id":"` + endedID + `","calls":3,` +
			`"expires_at":"2026-12-01T12:07:00Z"},"session_ended":true,"session_end_reason":"exited"}` + "\n")}
}

// probeServer is a server with sessions whose gate finds ans, to a
// ReplayOnly Check only.
func probeServer(t *testing.T, ans *sandboxd.StoredAnswer) (*Server, *replayGate) {
	t.Helper()
	gate := &replayGate{fakeGate: &fakeGate{}, r: &fakeReplay{by: sandboxd.ReplayByPayment, ans: ans}, how: replayOnProbe}
	cfg := sessionsConfig()
	cfg.Max = 1
	srv := newSessionServer(t, &fakeSessionEngine{}, gate.fakeGate, cfg)
	srv.Gate, srv.Retries = gate, true
	return srv, gate
}

// TestEndedSessionCallIsReplayed: the retry of a call that ended its
// session meets its stored answer, not the 404: the body is read, the gate
// asked for a replay only, for the call's identity (its session named).
// Without a payment, with retries off, or when nothing is stored, it is
// the 404, and without a payment or retries the gate is never asked.
func TestEndedSessionCallIsReplayed(t *testing.T) {
	srv, gate := probeServer(t, storedCall())
	path := "/v1/sessions/" + endedID + "/code"
	rec := doPaid(t, srv.Handler(), "POST", path, `{"code":"import os; os._exit(0)"}`)
	if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), storedCall().Body) || rec.Header().Get(x402.HeaderIdempotentReplayed) != "true" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	job := sandboxd.Job{Language: "python", Code: "import os; os._exit(0)"}
	req := gate.lastRequest()
	if !req.ReplayOnly || req.Kind != sandboxd.AnswerSessionCall || req.Transport != sandboxd.TransportHTTP ||
		req.Request != requestHash(sandboxd.TransportHTTP, sandboxd.AnswerSessionCall, endedID, job) {
		t.Errorf("probe %+v", req)
	}

	checked := gate.count(&gate.checked)
	if rec := do(t, srv.Handler(), "POST", path, `{"code":"1"}`); rec.Code != http.StatusNotFound {
		t.Errorf("unpaid: %d %s", rec.Code, rec.Body)
	}
	srv.Retries = false
	if rec := doPaid(t, srv.Handler(), "POST", path, `{"code":"1"}`); rec.Code != http.StatusNotFound {
		t.Errorf("retries off: %d %s", rec.Code, rec.Body)
	}
	if n := gate.count(&gate.checked); n != checked {
		t.Errorf("%d more checks for calls that are not probed", n-checked)
	}

	nothing := newSessionServer(t, &fakeSessionEngine{}, &fakeGate{}, sessionsConfig())
	nothing.Retries = true
	if rec := doPaid(t, nothing.Handler(), "POST", path, `{"code":"1"}`); rec.Code != http.StatusNotFound ||
		!strings.Contains(rec.Body.String(), "session") {
		t.Errorf("nothing stored: %d %s", rec.Code, rec.Body)
	}
	if rec := doPaid(t, nothing.Handler(), "POST", path, `{"code":"1","environment":"python"}`); rec.Code != http.StatusNotFound {
		t.Errorf("a body that does not validate: %d %s", rec.Code, rec.Body)
	}
}

// TestEndedSessionCallIsReplayedOverMCP: run_python with a session_id
// that no table holds, paid, is probed and answered from the stored
// answer, rebuilt as the tool result of a call.
func TestEndedSessionCallIsReplayedOverMCP(t *testing.T) {
	srv, gate := probeServer(t, storedCall())
	res := callTool(t, mustMCP(t, srv), map[string]any{"code": "1", "session_id": endedID}, paymentMeta())
	if res.IsError || res.Meta[mcptools.MetaReplayed] != true || !strings.Contains(text(t, res), "the session ended (exited)") {
		t.Fatalf("%+v %s", res, text(t, res))
	}
	if req := gate.lastRequest(); !req.ReplayOnly || req.Transport != sandboxd.TransportMCP ||
		req.Request != requestHash(sandboxd.TransportMCP, sandboxd.AnswerSessionCall, endedID, sandboxd.Job{Language: "python", Code: "1"}) {
		t.Errorf("probe %+v", req)
	}
}

// TestFullRoomOpenIsReplayed: the retry of an opening meets its stored
// answer (its session) even when sessions are full; without a payment it
// is the 429.
func TestFullRoomOpenIsReplayed(t *testing.T) {
	open := &sandboxd.StoredAnswer{Kind: sandboxd.AnswerSessionOpen, Status: 201, Settlement: fakeSettlement(),
		Body: []byte(`{"session_id":"ses_1","environment":"python","created_at":"x","expires_at":"y","idle_timeout_s":300,"max_lifetime_s":1800}` + "\n")}
	srv, gate := probeServer(t, open)
	mustOpenSession(t, srv) // the one session there is room for
	if rec := do(t, srv.Handler(), "POST", "/v1/sessions", ""); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("unpaid, full: %d %s", rec.Code, rec.Body)
	}
	rec := doPaid(t, srv.Handler(), "POST", "/v1/sessions", "")
	if rec.Code != 201 || !bytes.Equal(rec.Body.Bytes(), open.Body) || rec.Header().Get(x402.HeaderIdempotentReplayed) != "true" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if req := gate.lastRequest(); !req.ReplayOnly || req.Kind != sandboxd.AnswerSessionOpen ||
		req.Request != requestHash(sandboxd.TransportHTTP, sandboxd.AnswerSessionOpen, "", sandboxd.Job{Language: "python", Environment: "python"}) {
		t.Errorf("probe %+v", req)
	}
}

// TestPendingOpenReplayNamesItsSession: the retry of an opening whose
// settlement is pending gets the 202 with the session it opened, as the
// first did.
func TestPendingOpenReplayNamesItsSession(t *testing.T) {
	open := &sandboxd.StoredAnswer{Kind: sandboxd.AnswerSessionOpen, Status: 201,
		Body: []byte(`{"session_id":"ses_kept","environment":"python"}` + "\n")}
	pending := &sandboxd.Error{Code: sandboxd.CodePending, Message: "pending", Payment: &sandboxd.PaymentDetails{
		Settlement: &sandboxd.Settlement{Version: 2, ErrorReason: "settlement_pending", Transaction: "0xp"}}}
	gate := &replayGate{fakeGate: &fakeGate{}, r: &fakeReplay{ans: open, err: pending}, how: replayFromCheck}
	srv := newSessionServer(t, &fakeSessionEngine{}, gate.fakeGate, sessionsConfig())
	srv.Gate = gate
	rec := doPaid(t, srv.Handler(), "POST", "/v1/sessions", "")
	if rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"session_id":"ses_kept"`) ||
		!strings.Contains(rec.Body.String(), `"transaction":"0xp"`) || rec.Header().Get(x402.HeaderIdempotentReplayed) != "true" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	res := callNamed(t, mustMCP(t, srv), mcptools.OpenToolName, map[string]any{}, paymentMeta())
	if !res.IsError || res.Meta[mcptools.MetaReplayed] != true || len(res.Content) != 2 {
		t.Fatalf("MCP: %+v", res)
	}
	if kept, _ := res.Content[1].(*mcp.TextContent); kept == nil || !strings.Contains(kept.Text, "session_id ses_kept") {
		t.Errorf("MCP: %+v", res.Content[1])
	}
}
