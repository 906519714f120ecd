package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sandboxd"
)

func do(t *testing.T, h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestCodeAnswersTheResult(t *testing.T) {
	runner := &fakeRunner{result: sandboxd.Result{Stdout: "42\n", Status: sandboxd.StatusOK, Duration: 12 * time.Millisecond,
		Usage: &sandboxd.Usage{CPU: 9 * time.Millisecond, MaxRSSKB: 8200}}}
	gate := &fakeGate{}
	rec := do(t, newTestServer(runner, gate).Handler(), "POST", "/v1/code", `{"language":"python","code":"print(6*7)"}`)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	checkAnswer42(t, got)
	report := `{"success":true,"transaction":"0xsettled","network":"eip155:84532","payer":"0xpayer"}`
	if gate.settled != 1 || rec.Header().Get("Payment-Response") != base64.StdEncoding.EncodeToString([]byte(report)) ||
		rec.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("settled %d times, header %q, Cache-Control %q; want PAYMENT-RESPONSE %s, no-store",
			gate.settled, rec.Header().Get("Payment-Response"), rec.Header().Get("Cache-Control"), report)
	}
}

// checkAnswer42 checks the answer of a run that printed 42 (usage 9 ms,
// 8200 KiB): exactly the fields of /v1/code, on HTTP and MCP alike.
func checkAnswer42(t *testing.T, got map[string]any) {
	t.Helper()
	want := map[string]any{"lang": "python", "stdout": "42\n", "stderr": "", "exit_code": 0.0, "status": "ok",
		"timed_out": false, "oom_killed": false, "truncated": false, "duration_ms": 12.0, "cpu_ms": 9.0, "max_rss_kb": 8200.0,
		"environment": "python", "files_truncated": false}
	if files, ok := got["files"].([]any); !ok || len(files) != 0 {
		t.Errorf("files = %#v, want []", got["files"])
	}
	want["files"] = got["files"]
	for k, v := range want {
		if k != "files" && got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("answer has fields %v, want exactly %v", got, want)
	}
}

func TestCodeErrors(t *testing.T) {
	payErr := &sandboxd.Error{Code: sandboxd.CodePayment, Message: "payment required",
		Payment: termsDetails(map[string]any{"x402Version": 2, "error": "payment required"},
			map[string]any{"x402Version": 1, "error": "payment required"})}
	cases := []struct {
		name      string
		method    string
		path      string
		body      string
		runErr    error
		checkErr  error
		settleErr error
		status    int
		inError   string
		ran       bool
		released  bool
	}{
		{name: "form content type still JSON", body: `{"code":"print(1)"}`, status: 200, ran: true},
		{name: "python3 accepted", body: `{"language":"python3","code":"print(1)"}`, status: 200, ran: true},
		{name: "not JSON", body: `code=print(1)`, status: 400, inError: "JSON object"},
		{name: "array body", body: `[1]`, status: 400, inError: "JSON object"},
		{name: "empty body", body: ``, status: 400, inError: "empty"},
		{name: "truncated JSON", body: `{"code":"pri`, status: 400, inError: "ends too early"},
		{name: "trailing data", body: `{"code":"x"} {}`, status: 400, inError: "after the JSON"},
		{name: "trailing brace", body: `{"code":"x"}}`, status: 400, inError: "after the JSON"},
		{name: "trailing brackets", body: `{"code":"x"}]]]`, status: 400, inError: "after the JSON"},
		{name: "number for code", body: `{"code":5}`, status: 400, inError: `"code" must be a string`},
		{name: "null code", body: `{"code":null}`, status: 400, inError: "missing"},
		{name: "unknown field", body: `{"code":"x","argv":"y"}`, status: 400, inError: "unknown field \"argv\"; the fields are language, code, stdin, environment and files"},
		{name: "stdin at limit", body: `{"code":"x","stdin":"` + strings.Repeat("i", 10) + `"}`, status: 200, ran: true},
		{name: "stdin over limit", body: `{"code":"x","stdin":"` + strings.Repeat("i", 11) + `"}`, status: 413, inError: "stdin is 11 bytes, over the limit of 10"},
		{name: "number for stdin", body: `{"code":"x","stdin":1}`, status: 400, inError: `"stdin" must be a string`},
		{name: "unknown language", body: `{"language":"ruby","code":"x"}`, status: 400,
			inError: `language "ruby" is not supported; this service runs python (also python3)`},
		{name: "known language no image runs", body: `{"language":"JS","code":"x"}`, status: 400,
			inError: `javascript is not offered here`},
		{name: "empty code", body: `{"code":"  "}`, status: 400, inError: "missing or empty"},
		{name: "code over limit", body: `{"code":"` + strings.Repeat("x", 101) + `"}`, status: 413, inError: "limit of 100"},
		{name: "code at limit", body: `{"code":"` + strings.Repeat("x", 100) + `"}`, status: 200, ran: true},
		{name: "body over limit", body: `{"code":"` + strings.Repeat("x", 2000) + `"}`, status: 413, inError: "1024 bytes"},
		{name: "payment required", body: `{"code":"x"}`, checkErr: payErr, status: 402, inError: "payment required"},
		{name: "docker down", body: `{"code":"x"}`, runErr: sandboxd.Errorf(sandboxd.CodeUnavailable, "runtime", "Docker is not reachable"),
			status: 503, inError: "Docker is not reachable", ran: true, released: true},
		{name: "internal error hidden", body: `{"code":"x"}`, runErr: errors.New("secret /var/run detail"),
			status: 500, inError: "internal error", ran: true, released: true},
		{name: "settlement failed", body: `{"code":"x"}`, settleErr: payErr, status: 402, ran: true},
		{name: "wrong method", method: "GET", status: 405, inError: "not allowed"},
		{name: "unknown path", path: "/v2/code", status: 404, inError: "no such endpoint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runner := &fakeRunner{err: tc.runErr, result: sandboxd.Result{Status: sandboxd.StatusOK}}
			gate := &fakeGate{checkErr: tc.checkErr, settleErr: tc.settleErr}
			method, path := "POST", "/v1/code"
			if tc.method != "" {
				method = tc.method
			}
			if tc.path != "" {
				path = tc.path
			}
			rec := do(t, newTestServer(runner, gate).Handler(), method, path, tc.body)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var body struct{ Error string }
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("answer is not JSON: %q", rec.Body)
			}
			if !strings.Contains(body.Error, tc.inError) {
				t.Errorf("error %q does not contain %q", body.Error, tc.inError)
			}
			if strings.Contains(rec.Body.String(), "secret") {
				t.Errorf("internal detail leaked: %s", rec.Body)
			}
			if (runner.ran() > 0) != tc.ran {
				t.Errorf("ran %d times, want ran=%v", runner.ran(), tc.ran)
			}
			if (gate.released > 0) != tc.released {
				t.Errorf("released %d, want %v", gate.released, tc.released)
			}
			if tc.status == 402 {
				if terms := headerObject(rec.Header(), "Payment-Required"); terms["x402Version"] != 2.0 || terms["error"] != "payment required" {
					t.Errorf("402 without the terms header: %v", terms)
				}
				if rec.Body.String() != `{"error":"payment required","x402Version":1}`+"\n" {
					t.Errorf("402 body %q, want the v1 terms", rec.Body)
				}
			}
		})
	}
}

func TestBusyAnswers429WithRetryAfter(t *testing.T) {
	runner := &fakeRunner{block: make(chan struct{})}
	srv := newTestServer(runner, &fakeGate{})
	h := srv.Handler()
	done := make(chan int)
	go func() { done <- do(t, h, "POST", "/v1/code", `{"code":"x"}`).Code }()
	for runner.ran() == 0 {
		time.Sleep(time.Millisecond)
	}
	rec := do(t, h, "POST", "/v1/code", `{"code":"x"}`)
	if rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("over capacity: status %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	close(runner.block)
	if code := <-done; code != 200 {
		t.Fatalf("first request: %d", code)
	}
	if runner.ran() != 1 {
		t.Fatalf("the refused request ran")
	}
}

func TestHealthAndVersion(t *testing.T) {
	runner := &fakeRunner{}
	h := newTestServer(runner, &fakeGate{}).Handler()
	if rec := do(t, h, "GET", "/v1/health", ""); rec.Code != 200 {
		t.Fatalf("health: %d %s", rec.Code, rec.Body)
	}
	rec := do(t, h, "GET", "/v1/version", "")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"docker":"docker 20.10.24"`) ||
		!strings.Contains(rec.Body.String(), `"version":"test"`) {
		t.Fatalf("version: %d %s", rec.Code, rec.Body)
	}
	runner.healthErr = sandboxd.Errorf(sandboxd.CodeUnavailable, "runtime.health", "image sandbox-python:3.11 is missing: run `make image`")
	h = newTestServer(runner, &fakeGate{}).Handler() // a fresh server: engine answers are reused for engineTTL
	rec = do(t, h, "GET", "/v1/health", "")
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "make image") {
		t.Fatalf("unhealthy: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, h, "GET", "/v1/version", ""); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"version":"test"`) {
		t.Fatalf("version with Docker down: %d %s", rec.Code, rec.Body)
	}
}
