package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"sandboxd"
)

// TestSessionOverHTTP: open (201 and its fields), a call (the run's
// fields, result and session), the state, the end (204), then 404.
func TestSessionOverHTTP(t *testing.T) {
	value := "42"
	engine := &fakeSessionEngine{result: sandboxd.SessionResult{Result: sandboxd.Result{Stdout: "hi\n", Status: sandboxd.StatusOK}, Value: &value}}
	gate := &fakeGate{}
	srv := newSessionServer(t, engine, gate, sessionsConfig())
	h := srv.Handler()
	rec := do(t, h, "POST", "/v1/sessions", `{"environment":"python"}`)
	if rec.Code != http.StatusCreated || rec.Header().Get("Cache-Control") != "no-store" || rec.Header().Get("Payment-Response") == "" {
		t.Fatalf("open: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	var open map[string]any
	decodeRec(t, rec, &open)
	id, _ := open["session_id"].(string)
	if !regexp.MustCompile(`^ses_[0-9a-f]{32}$`).MatchString(id) || open["environment"] != "python" ||
		open["language"] != "python" || open["idle_timeout_s"] != 300.0 || open["max_lifetime_s"] != 1800.0 || len(open) != 7 {
		t.Fatalf("open answered %v", open)
	}
	for _, k := range []string{"created_at", "expires_at"} {
		if _, err := time.Parse(time.RFC3339, open[k].(string)); err != nil || !strings.HasSuffix(open[k].(string), "Z") {
			t.Fatalf("%s %v is not RFC 3339 UTC", k, open[k])
		}
	}
	if req := gate.requests[0]; req.Price != "0.01" || !strings.HasSuffix(req.ResourceURL, "/v1/sessions") || req.Extensions[bazaarKey] == nil {
		t.Fatalf("the open was checked with %+v", req)
	}

	rec = do(t, h, "POST", "/v1/sessions/"+id+"/code", `{"code":"x = 41\nx + 1"}`)
	if rec.Code != 200 {
		t.Fatalf("call: %d %s", rec.Code, rec.Body)
	}
	var call map[string]any
	decodeRec(t, rec, &call)
	session, _ := call["session"].(map[string]any)
	if call["result"] != "42" || call["stdout"] != "hi\n" || call["environment"] != "python" || session["session_id"] != id ||
		session["calls"] != 1.0 || call["session_ended"] != nil {
		t.Fatalf("call answered %s", rec.Body)
	}
	if req := gate.requests[1]; req.Price != "" || req.Environment != "python" || !strings.HasSuffix(req.ResourceURL, "/v1/sessions/{session_id}/code") || strings.Contains(req.ResourceURL, id) {
		t.Fatalf("the call was checked with %+v", req)
	}

	rec = do(t, h, "GET", "/v1/sessions/"+id, "")
	var state map[string]any
	decodeRec(t, rec, &state)
	if rec.Code != 200 || state["calls"] != 1.0 || state["busy"] != false || state["last_call_at"] == nil || state["language"] != "python" || len(state) != 8 {
		t.Fatalf("state: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, h, "DELETE", "/v1/sessions/"+id, ""); rec.Code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
	if _, closed, _ := engine.counts(); closed != 1 {
		t.Fatal("the container is not gone after the 204")
	}
	for _, m := range []string{"GET", "DELETE"} {
		if rec := do(t, h, m, "/v1/sessions/"+id, ""); rec.Code != 404 || !strings.Contains(rec.Body.String(), "closed") {
			t.Fatalf("%s after the end: %d %s", m, rec.Code, rec.Body)
		}
	}
	checked := gate.count(&gate.checked)
	if rec := do(t, h, "POST", "/v1/sessions/"+id+"/code", `{"code":"x"}`); rec.Code != 404 {
		t.Fatalf("call after the end: %d %s", rec.Code, rec.Body)
	}
	if gate.count(&gate.checked) != checked {
		t.Fatal("a call to an ended session had its payment looked at")
	}
}

// TestSessionCallAnswersItsEnd: a call that ended its session says so.
func TestSessionCallAnswersItsEnd(t *testing.T) {
	engine := &fakeSessionEngine{result: sandboxd.SessionResult{Result: sandboxd.Result{Status: sandboxd.StatusError, ExitCode: 3},
		Ended: true, EndReason: "the interpreter exited (3)"}}
	srv := newSessionServer(t, engine, &fakeGate{}, sessionsConfig())
	id := mustOpenSession(t, srv).SessionID
	rec := do(t, srv.Handler(), "POST", "/v1/sessions/"+id+"/code", `{"code":"import os; os._exit(3)"}`)
	var call map[string]any
	decodeRec(t, rec, &call)
	if rec.Code != 200 || call["session_ended"] != true || call["session_end_reason"] != "the interpreter exited (3)" || call["result"] != nil {
		t.Fatalf("the call that ended its session: %d %s", rec.Code, rec.Body)
	}
}

// TestSessionRequestsAreValidated: the body rules of /v1/code, and an
// environment in a call refused.
func TestSessionRequestsAreValidated(t *testing.T) {
	srv := newSessionServer(t, &fakeSessionEngine{}, &fakeGate{}, sessionsConfig())
	h := srv.Handler()
	id := mustOpenSession(t, srv).SessionID
	for _, c := range []struct {
		method, path, body string
		status             int
		says               string
	}{
		{"POST", "/v1/sessions/" + id + "/code", `{"code":"x","environment":"python"}`, 400, "a session keeps the environment"},
		{"POST", "/v1/sessions/" + id + "/code", `{"code":""}`, 400, `"code"`},
		{"POST", "/v1/sessions/" + id + "/code", `{"code":"x","code":"y"}`, 400, "more than once"},
		{"POST", "/v1/sessions/" + id + "/code", `{"code":"` + strings.Repeat("x", 101) + `"}`, 413, "code is"},
		{"POST", "/v1/sessions/" + id + "/code", `{"code":"x","nope":1}`, 400, "unknown field"},
		{"POST", "/v1/sessions", `{"environment":"cobol"}`, 400, "not configured"},
		{"POST", "/v1/sessions", `[]`, 400, "JSON object"},
		{"POST", "/v1/sessions", `{"environment":"python","x":1}`, 400, "unknown field"},
		{"POST", "/v1/sessions", `{"environment":"` + strings.Repeat("p", 5000) + `"}`, 413, "over the limit"},
		{"PUT", "/v1/sessions/" + id, ``, 405, "not allowed"},
		{"GET", "/v1/sessions/ses_nope", ``, 404, "unknown"},
	} {
		rec := do(t, h, c.method, c.path, c.body)
		var body errorBody
		decodeRec(t, rec, &body)
		if rec.Code != c.status || !strings.Contains(body.Error, c.says) {
			t.Errorf("%s %s %.40s: %d %q, want %d saying %q", c.method, c.path, c.body, rec.Code, body.Error, c.status, c.says)
		}
	}
}

// TestSessionsOffAre404: with sessions off every session route is a 404
// that says so, and /v1/version tells.
func TestSessionsOffAre404(t *testing.T) {
	h := newTestServer(&fakeRunner{}, &fakeGate{}).Handler()
	for _, r := range [][2]string{{"POST", "/v1/sessions"}, {"GET", "/v1/sessions/x"}, {"DELETE", "/v1/sessions/x"}, {"POST", "/v1/sessions/x/code"}} {
		if rec := do(t, h, r[0], r[1], `{}`); rec.Code != 404 || !strings.Contains(rec.Body.String(), "sessions are off") {
			t.Errorf("%s %s: %d %s", r[0], r[1], rec.Code, rec.Body)
		}
	}
	rec := do(t, h, "GET", "/v1/version", "")
	if !strings.Contains(rec.Body.String(), `"sessions":{"enabled":false}`) {
		t.Fatalf("version: %s", rec.Body)
	}
	srv := newSessionServer(t, &fakeSessionEngine{}, &fakeGate{}, sessionsConfig())
	rec = do(t, srv.Handler(), "GET", "/v1/version", "")
	if !strings.Contains(rec.Body.String(), `"sessions":{"enabled":true,"max":2,"idle_timeout_s":300,"max_lifetime_s":1800}`) {
		t.Fatalf("version: %s", rec.Body)
	}
}

// TestFullSessionsAre429BeforeAnyPayment: past sessions.max an open is 429
// with Retry-After, and its payment is not even checked.
func TestFullSessionsAre429BeforeAnyPayment(t *testing.T) {
	gate := &fakeGate{}
	cfg := sessionsConfig()
	cfg.Max, cfg.MaxPerPayer = 1, 0
	srv := newSessionServer(t, &fakeSessionEngine{}, gate, cfg)
	mustOpenSession(t, srv)
	rec := do(t, srv.Handler(), "POST", "/v1/sessions", "")
	if rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("open past the max: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if c := gate.count(&gate.checked); c != 1 {
		t.Fatalf("%d payments checked, want only the first open's", c)
	}
}

// TestPerPayerCapIs429BeforeReserve: a wallet at its cap is 429 once its
// payment is checked (that names the wallet), never reserved.
func TestPerPayerCapIs429BeforeReserve(t *testing.T) {
	gate := &fakeGate{}
	engine := &fakeSessionEngine{}
	srv := newSessionServer(t, engine, gate, sessionsConfig())
	mustOpenSession(t, srv)
	rec := do(t, srv.Handler(), "POST", "/v1/sessions", "")
	if rec.Code != 429 || !strings.Contains(rec.Body.String(), "this wallet holds 1 sessions already") {
		t.Fatalf("a second open by the same wallet: %d %s", rec.Code, rec.Body)
	}
	if r, s := gate.count(&gate.reserved), gate.count(&gate.settled); r != 1 || s != 1 {
		t.Fatalf("reserved %d, settled %d; want the first open's only", r, s)
	}
	if opened, _, _ := engine.counts(); opened != 1 {
		t.Fatalf("%d containers, want 1", opened)
	}
	gate.mu.Lock()
	gate.payer = "0xother"
	gate.mu.Unlock()
	mustOpenSession(t, srv)
}

// TestCallPaidByAnotherWalletIsNeverReservedOrSettled: 403, nothing ran,
// nothing reserved or settled; the owner's own call then runs.
func TestCallPaidByAnotherWalletIsNeverReservedOrSettled(t *testing.T) {
	gate := &fakeGate{}
	engine := &fakeSessionEngine{}
	srv := newSessionServer(t, engine, gate, sessionsConfig())
	id := mustOpenSession(t, srv).SessionID
	gate.mu.Lock()
	gate.payer = "0xthief"
	gate.mu.Unlock()
	rec := do(t, srv.Handler(), "POST", "/v1/sessions/"+id+"/code", `{"code":"print(secret)"}`)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "another wallet") {
		t.Fatalf("a call paid by another wallet: %d %s", rec.Code, rec.Body)
	}
	if r, s, rel := gate.count(&gate.reserved), gate.count(&gate.settled), gate.count(&gate.released); r != 1 || s != 1 || rel != 0 {
		t.Fatalf("reserved %d, settled %d, released %d: want the open's only", r, s, rel)
	}
	if _, _, runs := engine.counts(); runs != 0 {
		t.Fatalf("%d runs", runs)
	}
	gate.mu.Lock()
	gate.payer = ""
	gate.mu.Unlock()
	if rec := do(t, srv.Handler(), "POST", "/v1/sessions/"+id+"/code", `{"code":"x"}`); rec.Code != 200 {
		t.Fatalf("the owner's call: %d %s", rec.Code, rec.Body)
	}
}

// TestSessionServiceFailuresRelease: a start that failed and a call the
// service failed to deliver release their payments, never settle them.
func TestSessionServiceFailuresRelease(t *testing.T) {
	gate := &fakeGate{}
	engine := &fakeSessionEngine{err: sandboxd.Errorf(sandboxd.CodeUnavailable, "runtime", "docker is down")}
	srv := newSessionServer(t, engine, gate, sessionsConfig())
	if rec := do(t, srv.Handler(), "POST", "/v1/sessions", ""); rec.Code != 503 {
		t.Fatalf("open with the engine down: %d %s", rec.Code, rec.Body)
	}
	if r, s, rel := gate.count(&gate.reserved), gate.count(&gate.settled), gate.count(&gate.released); r != 1 || s != 0 || rel != 1 {
		t.Fatalf("a failed start: reserved %d, settled %d, released %d", r, s, rel)
	}
	engine.mu.Lock()
	engine.err = nil
	engine.runErr = sandboxd.Errorf(sandboxd.CodeInternal, "runtime", "lost the stream")
	engine.mu.Unlock()
	id := mustOpenSession(t, srv).SessionID // the failed start held no room
	if rec := do(t, srv.Handler(), "POST", "/v1/sessions/"+id+"/code", `{"code":"x"}`); rec.Code != 500 {
		t.Fatalf("a call the service failed: %d %s", rec.Code, rec.Body)
	}
	if s, rel := gate.count(&gate.settled), gate.count(&gate.released); s != 1 || rel != 2 {
		t.Fatalf("a failed call: settled %d (the open), released %d", s, rel)
	}
	if rec := do(t, srv.Handler(), "GET", "/v1/sessions/"+id, ""); rec.Code != 404 {
		t.Fatalf("the session of a failed call: %d", rec.Code)
	}
}

// TestUnsettledOpenClosesTheSession: an open whose settlement failed is
// withheld, and the session it started is closed (nobody paid for it).
func TestUnsettledOpenClosesTheSession(t *testing.T) {
	gate := &fakeGate{settleErr: sandboxd.Errorf(sandboxd.CodePayment, "payments.settle", "refused")}
	engine := &fakeSessionEngine{}
	srv := newSessionServer(t, engine, gate, sessionsConfig())
	rec := do(t, srv.Handler(), "POST", "/v1/sessions", "")
	if rec.Code != 402 || strings.Contains(rec.Body.String(), "ses_") {
		t.Fatalf("an unsettled open: %d %s", rec.Code, rec.Body)
	}
	if opened, closed, _ := engine.counts(); opened != 1 || closed != 1 {
		t.Fatalf("opened %d, closed %d", opened, closed)
	}
}

// TestSessionIDsAreNeverLogged: the logs of every session route, the
// refusals included, show no id in full.
func TestSessionIDsAreNeverLogged(t *testing.T) {
	var logs bytes.Buffer
	srv := newSessionServer(t, &fakeSessionEngine{}, &fakeGate{}, sessionsConfig())
	srv.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := srv.Handler()
	id := mustOpenSession(t, srv).SessionID
	for _, r := range [][3]string{{"POST", "/code", `{"code":"x"}`}, {"POST", "/code", `{"environment":"x"}`}, {"PUT", "", ""},
		{"GET", "", ""}, {"DELETE", "", ""}, {"GET", "", ""}, {"POST", "/nope", ""}} {
		do(t, h, r[0], "/v1/sessions/"+id+r[1], r[2])
	}
	if strings.Contains(logs.String(), id[4:12]) && strings.Contains(logs.String(), id[8:]) {
		t.Fatalf("the logs hold a session id in full:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), id[:8]) {
		t.Fatalf("the logs do not name the session at all:\n%s", logs.String())
	}
}

// TestSessionCORSAllowsDelete: a browser page may end its session.
func TestSessionCORSAllowsDelete(t *testing.T) {
	srv := newSessionServer(t, &fakeSessionEngine{}, &fakeGate{}, sessionsConfig())
	srv.CORSOrigins = []string{"*"}
	req, _ := http.NewRequest("OPTIONS", "/v1/sessions/ses_x", nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "DELETE")
	rec := doRequest(srv.Handler(), req)
	if rec.Code != 204 || !strings.Contains(rec.Header().Get("Access-Control-Allow-Methods"), "DELETE") {
		t.Fatalf("preflight: %d %v", rec.Code, rec.Header())
	}
}

// TestSessionOpenAPIDescribesTheAnswers: the session schemas describe
// what the handlers answer.
func TestSessionOpenAPIDescribesTheAnswers(t *testing.T) {
	srv := newSessionServer(t, &fakeSessionEngine{}, &fakeGate{}, sessionsConfig())
	doc, _ := json.Marshal(srv.openAPI())
	for _, want := range []string{`"/v1/sessions/{id}/code"`, `"SessionResult"`, `"session_end_reason"`, `"409"`, `"403"`} {
		if !bytes.Contains(doc, []byte(want)) {
			t.Errorf("the document lacks %s", want)
		}
	}
	req := srv.sessionResultSchema()["required"].([]string)
	if !strings.Contains(strings.Join(req, ","), "result,session") {
		t.Fatalf("required %v", req)
	}
}
