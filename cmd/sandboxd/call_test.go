package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"sandboxd/x402"
	"sandboxd/x402/channel/payer"
)

// mustPayerKey writes a test payer's key file and returns its path.
func mustPayerKey(tb testing.TB) string {
	tb.Helper()
	key := filepath.Join(tb.TempDir(), "payer.key")
	if err := os.WriteFile(key, []byte("0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return key
}

// TestCallRefusesHostileQuote runs `sandboxd call` against a server quoting
// a thousand times the price in another asset on another network: it says
// why, exits 1, and sends no payment.
func TestCallRefusesHostileQuote(t *testing.T) {
	var paid atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(x402.HeaderPaymentSignature) != "" || r.Header.Get(x402.HeaderXPayment) != "" {
			paid.Add(1)
			return
		}
		v, _ := x402.EncodeHeader(x402.PaymentRequired{X402Version: 2, Accepts: []x402.Requirements{{
			Scheme: "exact", Network: "eip155:8453", Amount: "5000000", Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
			PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", MaxTimeoutSeconds: 1 << 30,
			Extra: x402.Extra{Name: "USD Coin", Version: "2"}}}})
		w.Header().Set(x402.HeaderPaymentRequired, v)
		w.WriteHeader(http.StatusPaymentRequired)
	}))
	defer srv.Close()
	key := mustPayerKey(t)
	for _, args := range [][]string{
		{},
		{"--network", "eip155:8453"},
		{"--network", "eip155:8453", "--asset", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"},
	} {
		var stdout, stderr bytes.Buffer
		argv := append([]string{"--key-file", key, "--url", srv.URL, "-c", "print(1)"}, args...)
		if code := callCommand(argv, &stdout, &stderr); code != 1 {
			t.Fatalf("%v: exit %d, want 1\n%s", args, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), "refusing to pay, nothing was signed") {
			t.Errorf("%v: stderr %q does not say why", args, stderr.String())
		}
	}
	if n := paid.Load(); n != 0 {
		t.Fatalf("%d payments sent to the hostile server", n)
	}
}

func TestPlainHTTPWarning(t *testing.T) {
	for url, warn := range map[string]bool{
		"http://127.0.0.1:8080/v1/code":   false,
		"http://[::1]:8080/v1/code":       false,
		"http://localhost/v1/code":        false,
		"https://sandbox.example/v1/code": false,
		"http://sandbox.example/v1/code":  true,
		"http://10.0.0.5:8080/v1/code":    true,
	} {
		if got := plainHTTPWarning(url) != ""; got != warn {
			t.Errorf("%s: warning %v, want %v", url, got, warn)
		}
	}
}

func TestCallPolicyFlags(t *testing.T) {
	bad := [][]string{
		{"--max-amount", "-1"},
		{"--max-amount", "0.0000001"},
		{"--network", "solana:mainnet"},
		{"--max-window", "500ms"},
	}
	for _, args := range bad {
		var stdout, stderr bytes.Buffer
		if code := callCommand(append(args, "--key-file", "x", "-c", "1"), &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
}

// TestCallPrintsNoTerminalControls: a hostile server's answer (a body that
// is not JSON, settlement fields) carrying terminal escapes and forged lines
// reaches the operator's terminal escaped, never as control characters.
func TestCallPrintsNoTerminalControls(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("{\"stdout\":\"\x1b]0;owned\x07\x1b[2J\r\"}\n"))
	}))
	defer srv.Close()
	key := mustPayerKey(t)
	var stdout, stderr bytes.Buffer
	if code := callCommand([]string{"--key-file", key, "--url", srv.URL, "-c", "print(1)"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if strings.ContainsAny(stdout.String(), "\x1b\x07\r") || !strings.Contains(stdout.String(), `\x1b]0;owned`) {
		t.Fatalf("stdout %q: want the controls escaped", stdout.String())
	}

	var out bytes.Buffer
	printAnswer(&out, &payer.Paid{PaidResponse: &x402.PaidResponse{StatusCode: 200, Body: []byte(`{}`), Settlement: &x402.SettleResponse{
		Success: true, Payer: "0xabc\npaid: payer 0xforged", Network: "eip155:8453\x1b[31m", Transaction: "0x1"}}})
	if strings.Count(out.String(), "\npaid:") != 1 || strings.Contains(out.String(), "\x1b") {
		t.Fatalf("settlement printed as %q: want one line, no controls", out.String())
	}
}

// TestCallRefusalPrintsNoTerminalControls: the "error" a hostile server
// answers to the paid retry reaches stderr escaped.
func TestCallRefusalPrintsNoTerminalControls(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, _ := x402.EncodeHeader(x402.PaymentRequired{X402Version: 2, Accepts: []x402.Requirements{{
			Scheme: "exact", Network: x402.DefaultClientNetwork, Amount: "5000", Asset: x402.DefaultClientAsset,
			PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", MaxTimeoutSeconds: 60,
			Extra: x402.Extra{Name: "USDC", Version: "2"}}}})
		w.Header().Set(x402.HeaderPaymentRequired, v)
		w.WriteHeader(http.StatusPaymentRequired)
		_, _ = w.Write([]byte(`{"error":"\u001b]0;owned\u0007\u001b[2Jpaid in full"}`))
	}))
	defer srv.Close()
	key := mustPayerKey(t)
	var stdout, stderr bytes.Buffer
	if code := callCommand([]string{"--key-file", key, "--url", srv.URL, "-c", "print(1)"}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if strings.ContainsAny(stderr.String(), "\x1b\x07") || !strings.Contains(stderr.String(), "paid in full") {
		t.Fatalf("stderr %q: want the server's message with its controls escaped", stderr.String())
	}
}

// TestCallBodyLanguage: a one-shot call names python unless --language
// names another, passed as given (the service checks it); a call in a
// session leaves the field out unless --language names one.
func TestCallBodyLanguage(t *testing.T) {
	for _, tc := range []struct {
		lang      string
		inSession bool
		want      string
	}{
		{"", false, `{"code":"1","language":"python"}`},
		{"JS", false, `{"code":"1","language":"JS"}`},
		{"", true, `{"code":"1"}`},
		{"bash", true, `{"code":"1","language":"bash"}`},
		{"ruby\u0000", false, `{"code":"1","language":"ruby\u0000"}`},
	} {
		b, err := json.Marshal(callBody(tc.lang, tc.inSession, "1"))
		if err != nil || string(b) != tc.want {
			t.Errorf("callBody(%q, %v) = %s, want %s", tc.lang, tc.inSession, b, tc.want)
		}
	}
}
