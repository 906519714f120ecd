package httpapi

import (
	"testing"

	"sandboxd"
)

// TestRequestIdentity: the identity is the validated request, not its
// bytes: key order, whitespace, the language's spelling or absence, an
// absent stdin and the files' order are one request; the transport, the
// operation, the session, the code, the stdin, a file's name or bytes,
// and a run's environment make another. A call's environment is its
// session's and an open's input is its environment alone.
func TestRequestIdentity(t *testing.T) {
	srv := newTestServer(&fakeRunner{}, &fakeGate{})
	srv.MaxFiles, srv.MaxFilesBytes = 4, 1<<10
	srv.Environments = []sandboxd.Environment{{Name: "python", Languages: []string{sandboxd.LanguagePython}}, {Name: "data", Languages: []string{sandboxd.LanguagePython}}}
	hash := func(body string) string {
		t.Helper()
		var req codeRequest
		if err := decodeObject([]byte(body), srv.requestLimits(requestShape), &req); err != nil {
			t.Fatal(err)
		}
		job, err := srv.newJob(req)
		if err != nil {
			t.Fatal(err)
		}
		return requestHash(sandboxd.TransportHTTP, sandboxd.AnswerRun, "", job)
	}
	files := `"files":[{"name":"a","content":"` + b64("A") + `"},{"name":"b","content":"` + b64("B") + `"}]`
	base := hash(`{"code":"print(1)",` + files + `}`)
	for _, same := range []string{
		`{ "code" : "print(1)", ` + files + `, "stdin": "" }`,
		`{"language":"Python3",` + files + `,"code":"print(1)"}`,
		`{"code":"print(1)","environment":"PYTHON","files":[{"name":"b","content":"` + b64("B") + `"},{"name":"a","content":"` + b64("A") + `"}]}`,
	} {
		if got := hash(same); got != base {
			t.Errorf("%s: another identity", same)
		}
	}
	for _, other := range []string{
		`{"code":"print(2)",` + files + `}`,
		`{"code":"print(1)","stdin":"x",` + files + `}`,
		`{"code":"print(1)","environment":"data",` + files + `}`,
		`{"code":"print(1)","files":[{"name":"a","content":"` + b64("A") + `"},{"name":"c","content":"` + b64("B") + `"}]}`,
		`{"code":"print(1)","files":[{"name":"a","content":"` + b64("A") + `"},{"name":"b","content":"` + b64("C") + `"}]}`,
		`{"code":"print(1)"}`,
	} {
		if hash(other) == base {
			t.Errorf("%s: the same identity", other)
		}
	}
	if len(base) != 64 {
		t.Errorf("identity %q, want 64 hex digits", base)
	}

	job := sandboxd.Job{Language: "python", Code: "1", Environment: "python"}
	call := requestHash(sandboxd.TransportHTTP, sandboxd.AnswerSessionCall, "ses_a", job)
	distinct := map[string]string{
		"run":             requestHash(sandboxd.TransportHTTP, sandboxd.AnswerRun, "", job),
		"call":            call,
		"call over MCP":   requestHash(sandboxd.TransportMCP, sandboxd.AnswerSessionCall, "ses_a", job),
		"another session": requestHash(sandboxd.TransportHTTP, sandboxd.AnswerSessionCall, "ses_b", job),
		"open":            requestHash(sandboxd.TransportHTTP, sandboxd.AnswerSessionOpen, "", job),
		"open in data":    requestHash(sandboxd.TransportHTTP, sandboxd.AnswerSessionOpen, "", sandboxd.Job{Environment: "data"}),
	}
	seen := map[string]string{}
	for name, h := range distinct {
		if prev, ok := seen[h]; ok {
			t.Errorf("%s and %s share an identity", name, prev)
		}
		seen[h] = name
	}
	if requestHash(sandboxd.TransportHTTP, sandboxd.AnswerSessionCall, "ses_a", sandboxd.Job{Code: "1"}) != call {
		t.Error("a call's identity depends on its session's language or environment")
	}
	if requestHash(sandboxd.TransportHTTP, sandboxd.AnswerSessionOpen, "", job) !=
		requestHash(sandboxd.TransportHTTP, sandboxd.AnswerSessionOpen, "", sandboxd.Job{Language: "python", Environment: "python"}) {
		t.Error("an open's identity depends on more than its language and environment")
	}
	if requestHash(sandboxd.TransportHTTP, sandboxd.AnswerSessionOpen, "", job) ==
		requestHash(sandboxd.TransportHTTP, sandboxd.AnswerSessionOpen, "", sandboxd.Job{Language: "bash", Environment: "python"}) {
		t.Error("an open's identity does not depend on its language")
	}
}

// TestPaidRequestsNameTheirAnswer: every paid flow hands the gate its
// kind, its transport and its identity.
func TestPaidRequestsNameTheirAnswer(t *testing.T) {
	gate := &fakeGate{}
	srv := newSessionServer(t, &fakeSessionEngine{}, gate, sessionsConfig())
	h := srv.Handler()
	code := sandboxd.Job{Language: "python", Code: "print(1)", Environment: "python"}
	want := func(what string, kind sandboxd.AnswerKind, tr sandboxd.Transport, session string, job sandboxd.Job) {
		t.Helper()
		req := gate.lastRequest()
		if req.Kind != kind || req.Transport != tr || req.ReplayOnly || req.Request != requestHash(tr, kind, session, job) {
			t.Errorf("%s: %+v", what, req)
		}
	}
	do(t, h, "POST", "/v1/code", `{"code":"print(1)"}`)
	want("run", sandboxd.AnswerRun, sandboxd.TransportHTTP, "", code)
	open := mustOpenSession(t, srv)
	want("open", sandboxd.AnswerSessionOpen, sandboxd.TransportHTTP, "", sandboxd.Job{Language: "python", Environment: "python"})
	do(t, h, "POST", "/v1/sessions/"+open.SessionID+"/code", `{"code":"print(1)"}`)
	want("call", sandboxd.AnswerSessionCall, sandboxd.TransportHTTP, open.SessionID, code)

	cs := mustMCP(t, srv)
	callTool(t, cs, map[string]any{"code": "print(1)"}, nil)
	want("MCP run", sandboxd.AnswerRun, sandboxd.TransportMCP, "", code)
	callTool(t, cs, map[string]any{"code": "print(1)", "session_id": open.SessionID}, nil)
	want("MCP call", sandboxd.AnswerSessionCall, sandboxd.TransportMCP, open.SessionID, code)
	gate.payer = "0xother" // one session per payer
	mustOpenOverMCP(t, cs)
	want("MCP open", sandboxd.AnswerSessionOpen, sandboxd.TransportMCP, "", sandboxd.Job{Language: "python", Environment: "python"})
}
