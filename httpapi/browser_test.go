package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"sandboxd"
)

// TestBrowserMustSendJSON: a POST that runs or pays, from a browser (with
// Origin, the page's own included), is refused 415 unless it declares
// application/json, the type a browser sends only after a preflight; it
// runs nothing. Without Origin (curl, agents) any type is taken.
func TestBrowserMustSendJSON(t *testing.T) {
	runner := &fakeRunner{result: sandboxd.Result{Stdout: "1\n", Status: sandboxd.StatusOK}}
	api := newTestServer(runner, &fakeGate{})
	h := api.Handler()
	code := `{"code":"print(1)"}`
	mcpCall := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(1)"}}}`
	cases := []struct {
		name, path, origin, ctype, body string
		status                          int
	}{
		{"text/plain from another origin", "/v1/code", "https://evil.example", "text/plain", code, 415},
		{"a form from another origin", "/v1/code", "https://evil.example", "application/x-www-form-urlencoded", code, 415},
		{"multipart from another origin", "/v1/code", "https://evil.example", "multipart/form-data; boundary=x", code, 415},
		{"no type from another origin", "/v1/code", "https://evil.example", "", code, 415},
		{"text/plain from the page's origin", "/v1/code", "http://example.com", "text/plain;charset=utf-8", code, 415},
		{"json-looking type", "/v1/code", "null", "application/json-patch+json", code, 415},
		{"text/plain to /mcp", "/mcp", "https://evil.example", "text/plain", mcpCall, 415},
		{"json from a browser", "/v1/code", "https://evil.example", "application/json", code, 200},
		{"json with charset", "/v1/code", "http://example.com", "Application/JSON; charset=utf-8", code, 200},
		{"curl's form type, no Origin", "/v1/code", "", "application/x-www-form-urlencoded", code, 200},
		{"no type, no Origin", "/v1/code", "", "", code, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := runner.ran()
			req := httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(c.body))
			req.Header.Set("Origin", c.origin)
			if c.origin == "" {
				req.Header.Del("Origin")
			}
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			if c.path == "/mcp" {
				req.Header.Set("Accept", "application/json, text/event-stream")
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.status, rec.Body)
			}
			ran := runner.ran() - before
			if c.status == 415 {
				if ran != 0 || !strings.Contains(rec.Body.String(), "Content-Type: application/json") {
					t.Errorf("ran %d, answer %s; want nothing run and a 415 that says to send application/json", ran, rec.Body)
				}
			} else if ran != 1 {
				t.Errorf("ran %d times, want 1", ran)
			}
		})
	}
}

// TestJSONAnswersSayNosniff: every JSON answer, an error, a run, a JSON-RPC
// refusal and the SDK's own MCP answers, says X-Content-Type-Options:
// nosniff.
func TestJSONAnswersSayNosniff(t *testing.T) {
	runner := &fakeRunner{result: sandboxd.Result{Stdout: "<script>\n", Status: sandboxd.StatusOK}}
	h := newTestServer(runner, &fakeGate{}).Handler()
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/code", `{"code":"print(1)"}`},
		{"POST", "/v1/code", `{`},
		{"GET", "/v1/health", ""},
		{"GET", "/nowhere", ""},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"POST", "/mcp", "[" + strings.Repeat(`{},`, 20) + "{}]"},
	} {
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s: %d, X-Content-Type-Options %q, want nosniff", c.method, c.path, rec.Code, got)
		}
	}
}

// TestEchoedPathIsEscaped: a 404 or 405 that echoes the path carries no <
// or > the caller chose.
func TestEchoedPathIsEscaped(t *testing.T) {
	h := newTestServer(&fakeRunner{}, &fakeGate{}).Handler()
	for _, c := range []struct{ method, path string }{
		{"GET", "/%3Cscript%3Ealert(1)%3C/script%3E"},
		{"GET", "/v1/code/%3Cimg%3E"},
		{"DELETE", "/v1/%3Cb%3E"},
		{"PUT", "/v1/code"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if body := rec.Body.String(); strings.ContainsAny(body, "<>") || rec.Code < 400 {
			t.Errorf("%s %s: %d %s; want an error with < and > escaped", c.method, c.path, rec.Code, body)
		}
	}
}
