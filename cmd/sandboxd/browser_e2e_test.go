package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"sandboxd/internal/testenv"
)

// TestBrowserSimpleRequestRunsNothing: a page on another origin (or the
// page's own) that sends a "simple" request, text/plain with no preflight,
// to /v1/code or /mcp is answered 415 and runs nothing (the runs counter
// stays at zero); the same request with no Origin, as curl sends it, runs.
// (On /mcp the SDK refused text/plain already; the guard now refuses it
// before the body is read.)
func TestBrowserSimpleRequestRunsNothing(t *testing.T) {
	testenv.RequireIntegration(t)
	s := startService(t, uniqueInstance(t))
	code := `{"code":"print(1)"}`
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(1)"}}}`
	for _, c := range []struct{ path, body string }{{"/v1/code", code}, {"/mcp", call}} {
		for _, origin := range []string{"https://evil.example", s.URL} {
			status, body := postAs(t, s.URL+c.path, origin, "text/plain;charset=UTF-8", c.body)
			if status != http.StatusUnsupportedMediaType || !strings.Contains(body, "application/json") {
				t.Errorf("%s from %s: %d %.200s, want 415 saying to send application/json", c.path, origin, status, body)
			}
		}
	}
	if n := runsTotal(t, s.MetricsURL()); n != 0 {
		t.Fatalf("%v runs after the refused requests, want 0", n)
	}
	// curl -d sends a form's type; an MCP client sends JSON (the SDK
	// wants it from anyone).
	for i, c := range []struct{ path, ctype, body string }{
		{"/v1/code", "application/x-www-form-urlencoded", code}, {"/mcp", "application/json", call},
	} {
		status, body := postAs(t, s.URL+c.path, "", c.ctype, c.body)
		if status != http.StatusOK || !strings.Contains(body, `"stdout":"1\n"`) {
			t.Errorf("%s without Origin: %d %.300s, want 200 with the output", c.path, status, body)
		}
		if n := runsTotal(t, s.MetricsURL()); n != float64(i+1) {
			t.Errorf("%v runs after %d taken requests", n, i+1)
		}
	}
}

// postAs posts body with the Origin (none when "") and Content-Type given.
func postAs(t *testing.T, url, origin, ctype, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// runsTotal is sandboxd_runs_total summed over its statuses.
func runsTotal(t *testing.T, base string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, m := range families["sandboxd_runs_total"].GetMetric() {
		total += m.GetCounter().GetValue()
	}
	return total
}
