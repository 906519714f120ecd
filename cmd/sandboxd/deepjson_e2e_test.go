package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandboxd/internal/testenv"
)

// rssKB is the resident memory of process pid, from /proc.
func rssKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}

// TestDeepJSONOverTheBinary sends the real service, payments on, JSON
// nested 100,000 deep in the body of POST /v1/code, in an MCP call's _meta,
// and in a payment header (over the 64 KiB header limit: the server refuses
// it whole), and the deepest payment header under its 16 KB cap. Each is
// refused within 50 ms, and the process's resident memory grows by less
// than 5 MB. Before the depth cap, one such body took the process past
// gigabytes in seconds, unanswered.
func TestDeepJSONOverTheBinary(t *testing.T) {
	testenv.RequireIntegration(t)
	s := startService(t, uniqueInstance(t),
		"SANDBOX_PAYMENTS_ENABLED=true", "SANDBOX_PAYMENTS_NETWORK=eip155:84532",
		"SANDBOX_PAYMENTS_ASSET=0x036CbD53842c5426634e7929541eC2318f3dCF7e", "SANDBOX_PAYMENTS_ASSET_NAME=USDC",
		"SANDBOX_PAYMENTS_ASSET_VERSION=2", "SANDBOX_PAYMENTS_PRICE=0.005",
		"SANDBOX_PAYMENTS_PAY_TO=0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
		"SANDBOX_PAYMENTS_SETTLEMENT=facilitator",
		"SANDBOX_PAYMENTS_FACILITATOR_URL=http://127.0.0.1:9", // never reached: every payment is refused first
		"SANDBOX_PAYMENTS_LEDGER="+filepath.Join(t.TempDir(), "ledger.db"))
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	header := func(depth int) string {
		return base64.StdEncoding.EncodeToString([]byte(`{"x402Version":2,"payload":` + strings.Repeat("[", depth)))
	}
	cases := []struct {
		name, path, body, header string
		status                   int
		want                     string
	}{
		{"body", "/v1/code", `{"code":` + deep + `}`, "", 400, "nesting is too deep"},
		{"mcp _meta", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(1)"},"_meta":{"x402/payment":` + deep + `}}}`, "", 400, "nesting is too deep"},
		{"header 100000", "/v1/code", `{"code":"print(1)"}`, header(100_000), 431, ""},
		{"header 12000", "/v1/code", `{"code":"print(1)"}`, header(12_000), 400, "nesting is too deep"},
	}
	client := &http.Client{Timeout: 10 * time.Second}
	send := func(path, body, header string) (int, string, time.Duration) {
		req, err := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if header != "" {
			req.Header.Set("PAYMENT-SIGNATURE", header)
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error(), time.Since(start)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b), time.Since(start)
	}
	// First a request of the same size that is no attack (its code is over
	// max_code_bytes), so the heap has grown to serve a body this size.
	if status, body, _ := send("/v1/code", `{"code":"`+strings.Repeat("x", 200_000)+`"}`, ""); status != 413 {
		t.Fatalf("a 200 KB program: %d %.300s", status, body)
	}
	pid := s.Cmd.Process.Pid
	before := rssKB(t, pid)
	for _, c := range cases {
		took := time.Duration(1<<63 - 1)
		var status int
		var body string
		for range 3 { // the fastest of three: a busy host's scheduler is not the service's cost
			var d time.Duration
			status, body, d = send(c.path, c.body, c.header)
			took = min(took, d)
		}
		t.Logf("%s: %d in %v", c.name, status, took)
		if status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s: answer %d %.300s, want %d with %q", c.name, status, body, c.status, c.want)
		}
		if took > 50*time.Millisecond {
			t.Errorf("%s: answered in %v, want under 50ms", c.name, took)
		}
	}
	after := rssKB(t, pid)
	t.Logf("resident memory %d KB before, %d KB after", before, after)
	if grew := after - before; grew > 5<<10 {
		t.Errorf("resident memory grew by %d KB, want under 5 MB", grew)
	}
}
