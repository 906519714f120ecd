package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"sandboxd/httpapi/wire"
)

// sessionStep is one call of a session in TestLanguages and what it must
// answer: its stdout, status and result (JSON: null or a string).
type sessionStep struct {
	code, stdout, status, result string
}

// javascriptSession keeps the main context across calls: an import, a
// let, a const, a function, a class and an awaited value of the first call
// are there in the next ones; a value is shown as Node's REPL shows it; a
// loop interrupted at the timeout leaves the session working.
var javascriptSession = []sessionStep{
	{"import fs from \"node:fs\"\nlet n = 1\nconst base = 40\nfunction add(a, b) { return a + b }\n" +
		"class Box { constructor(v) { this.v = v } }\nconst later = await Promise.resolve(\"awaited\")",
		"", "ok", "null"},
	{"n += 1\nadd(base, n)", "", "ok", `"42"`},
	{`console.log(new Box(later).v); later + " " + typeof fs.readFileSync`, "awaited\n", "ok", `"'awaited function'"`},
	{"1+1", "", "ok", `"2"`},
	{"({a: 1, s: \"x\"})", "", "ok", `"{ a: 1, s: 'x' }"`},
	{"for (;;) {}", "", "timeout", "null"},
	{"n", "", "ok", `"2"`},
}

// typescriptSession is javascriptSession's state with type annotations (an
// interface, a parameter property), and a syntax error answered as the
// call's result, the session kept.
var typescriptSession = []sessionStep{
	{"import fs from \"node:fs\"\nlet n: number = 1\nconst base: number = 40\n" +
		"function add(a: number, b: number): number { return a + b }\ninterface Named { v: string }\n" +
		"class Box implements Named { constructor(public v: string) {} }\n" +
		"const later: string = await Promise.resolve(\"awaited\")",
		"", "ok", "null"},
	{"n += 1\nadd(base, n)", "", "ok", `"42"`},
	{"let y z", "", "error", "null"},
	{`console.log(new Box(later).v); later + " " + typeof fs.readFileSync`, "awaited\n", "ok", `"'awaited function'"`},
	{"for (;;) {}", "", "timeout", "null"},
	{"n", "", "ok", `"2"`},
}

// bashSession keeps a variable, a function, the working directory and an
// exported value (seen by a child) across calls; a loop interrupted at the
// timeout leaves the session working.
var bashSession = []sessionStep{
	{"x=41\ngreet() { echo \"hi $1\"; }\nmkdir -p /tmp/d && cd /tmp/d\nexport E=exported", "", "ok", "null"},
	{"x=$((x + 1)); greet $x; pwd; bash -c 'echo $E'", "hi 42\n/tmp/d\nexported\n", "ok", "null"},
	{"while :; do :; done", "", "timeout", "null"},
	{"echo $x $(pwd)", "42 /tmp/d\n", "ok", "null"},
}

// checkSession opens a session of lang, makes its calls in order, checks
// each answer and that the session is still open after the last, and ends
// it.
func checkSession(t *testing.T, s *service, lang string, steps []sessionStep) {
	req, _ := json.Marshal(map[string]string{"language": lang})
	status, body := s.sessionRequest(t, "POST", "/v1/sessions", string(req))
	var open wire.SessionResponse
	if err := json.Unmarshal(body, &open); err != nil || status != http.StatusCreated ||
		open.Language != lang || open.Environment != "node" {
		t.Fatalf("open: %d %s (%v)", status, body, err)
	}
	path := "/v1/sessions/" + open.SessionID
	for i, step := range steps {
		req, _ := json.Marshal(map[string]string{"code": step.code})
		status, body := s.sessionRequest(t, "POST", path+"/code", string(req))
		var a struct {
			wire.SessionCodeResponse
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(body, &a); err != nil || status != http.StatusOK {
			t.Fatalf("call %d: %d %s (%v)", i+1, status, body, err)
		}
		if a.Lang != lang || a.Status != step.status || a.Stdout != step.stdout || string(a.Result) != step.result ||
			a.SessionEnded || a.Session.Calls != i+1 {
			t.Fatalf("call %d %q answered %s;\nwant status %s, stdout %q, result %s, the session kept",
				i+1, step.code, body, step.status, step.stdout, step.result)
		}
	}
	if status, body := s.sessionRequest(t, "DELETE", path, ""); status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", status, body)
	}
}
