package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"sandboxd/x402"
)

// testSessionID is a well-formed session id.
const testSessionID = "ses_8f0c1d2e3a4b5c6d7e8f901a2b3c4d5e"

// sessionServer is a fake sandboxd: it quotes terms (default ones unless
// set) to every unpaid POST, answers a paid one with answer (status and
// body) and a settlement, GET and DELETE with their own answers, and
// records every request it saw.
type sessionServer struct {
	mu    sync.Mutex
	terms *x402.Requirements
	paid  []string // "METHOD path body" of each paid request
	seen  []string // "METHOD path" of every request
}

func (s *sessionServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.seen = append(s.seen, r.Method+" "+r.URL.EscapedPath())
	terms := s.terms
	if isPaid(r) {
		s.paid = append(s.paid, r.Method+" "+r.URL.EscapedPath()+" "+string(body))
	}
	s.mu.Unlock()
	switch {
	case r.Method == http.MethodGet:
		_, _ = w.Write([]byte(`{"session_id":"` + testSessionID + `","calls":3,"busy":false,"note":"\u001b[2J"}`))
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	case !isPaid(r) && terms != nil:
		v, _ := x402.EncodeHeader(x402.PaymentRequired{X402Version: 2, Accepts: []x402.Requirements{*terms}})
		w.Header().Set(x402.HeaderPaymentRequired, v)
		w.WriteHeader(http.StatusPaymentRequired)
	case !isPaid(r):
		quoteDefaultTerms(w, `"payment required"`)
	case r.URL.Path == "/v1/sessions":
		settled, _ := x402.EncodeHeader(x402.SettleResponse{Success: true, Transaction: "0x01", Network: x402.DefaultClientNetwork, Payer: "0xp"})
		w.Header().Set(x402.HeaderPaymentResponse, settled)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"session_id":"` + testSessionID + `","environment":"data"}`))
	default:
		_, _ = w.Write([]byte(`{"stdout":"","result":"42","session":{"session_id":"` + testSessionID + `","calls":2}}`))
	}
}

// requests returns what the server saw, and the paid requests among them.
func (s *sessionServer) requests() (seen, paid []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...), append([]string(nil), s.paid...)
}

// mustSessionServer starts a sessionServer.
func mustSessionServer(t *testing.T) (*sessionServer, string) {
	t.Helper()
	s := &sessionServer{}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL
}

// runCLI runs sandboxd with args and returns its exit code and output.
func runCLI(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestSessionOpenAndCallPay: session open POSTs its language and
// environment to /v1/sessions and pays within the defaults (exit 0 on 201,
// the id and the settlement printed); call --session pays for a call at
// /v1/sessions/ID/code beside --url, in the session's language unless
// --language names one.
func TestSessionOpenAndCallPay(t *testing.T) {
	srv, base := mustSessionServer(t)
	key := mustPayerKey(t)
	code, out, errs := runCLI("session", "open", "--key-file", key, "--url", base+"/v1/sessions", "--environment", "data",
		"--language", "sh")
	if code != 0 || !strings.Contains(out, "HTTP 201") || !strings.Contains(out, testSessionID) || !strings.Contains(out, "paid: payer 0xp") {
		t.Fatalf("session open: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI("call", "--key-file", key, "--url", base+"/v1/code", "--session", testSessionID, "-c", "x + 1")
	if code != 0 || !strings.Contains(out, `"result": "42"`) {
		t.Fatalf("call --session: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI("call", "--key-file", key, "--url", base+"/v1/code", "--session", testSessionID,
		"--language", "bash", "-c", "x + 1")
	if code != 0 {
		t.Fatalf("call --session --language: exit %d\n%s%s", code, out, errs)
	}
	_, paid := srv.requests()
	want := []string{"POST /v1/sessions " + `{"environment":"data","language":"sh"}`,
		"POST /v1/sessions/" + testSessionID + "/code " + `{"code":"x + 1"}`,
		"POST /v1/sessions/" + testSessionID + "/code " + `{"code":"x + 1","language":"bash"}`}
	if strings.Join(paid, "\n") != strings.Join(want, "\n") {
		t.Fatalf("paid requests:\n%s\nwant:\n%s", strings.Join(paid, "\n"), strings.Join(want, "\n"))
	}
}

// TestSessionRefusesHostileQuotes: a server that quotes, for the opening
// or for a call in a session, another price, payee, network or asset than
// the flags allow is refused with the reason, exit 1, and is sent no
// payment: nothing is signed.
func TestSessionRefusesHostileQuotes(t *testing.T) {
	fair := x402.Requirements{Scheme: "exact", Network: x402.DefaultClientNetwork, Amount: "5000", Asset: x402.DefaultClientAsset,
		PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", MaxTimeoutSeconds: 60, Extra: x402.Extra{Name: "USDC", Version: "2"}}
	hostile := map[string]func(*x402.Requirements){
		"twice the price":  func(r *x402.Requirements) { r.Amount = "10000" },
		"another payee":    func(r *x402.Requirements) { r.PayTo = "0x000000000000000000000000000000000000dEaD" },
		"another network":  func(r *x402.Requirements) { r.Network = "eip155:8453" },
		"another asset":    func(r *x402.Requirements) { r.Asset = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" },
		"a v1-only quote":  func(r *x402.Requirements) { r.Scheme = "upto" },
		"a million tokens": func(r *x402.Requirements) { r.Amount = "1000000000000" },
	}
	key := mustPayerKey(t)
	for name, change := range hostile {
		srv, base := mustSessionServer(t)
		terms := fair
		change(&terms)
		srv.terms = &terms
		for what, argv := range map[string][]string{
			"open": {"session", "open", "--key-file", key, "--url", base + "/v1/sessions", "--pay-to", fair.PayTo},
			"call": {"call", "--key-file", key, "--url", base + "/v1/code", "--session", testSessionID, "--pay-to", fair.PayTo, "-c", "1"},
		} {
			code, _, errs := runCLI(argv...)
			if code != 1 || !strings.Contains(errs, "refusing to pay, nothing was signed") {
				t.Errorf("%s, %s: exit %d, stderr %q; want a refusal", name, what, code, errs)
			}
		}
		if _, paid := srv.requests(); len(paid) != 0 {
			t.Errorf("%s: payments sent: %v", name, paid)
		}
	}
}

// TestSessionIDCannotMoveTheRequest: an id that would change the URL it is
// put in (another path, a query, escapes) is refused before any request,
// by show, close and call --session alike.
func TestSessionIDCannotMoveTheRequest(t *testing.T) {
	srv, base := mustSessionServer(t)
	key := mustPayerKey(t)
	for _, id := range []string{"../code", "ses_1/../../v1/code", "ses_1?x=1", "ses_1#x", "%2e%2e", "ses 1", "", strings.Repeat("a", 129)} {
		argvs := [][]string{
			{"session", "show", "--url", base + "/v1/sessions", id},
			{"session", "close", "--url", base + "/v1/sessions", id},
		}
		if id != "" { // call's --session "" is no session
			argvs = append(argvs, []string{"call", "--key-file", key, "--url", base + "/v1/code", "--session", id, "-c", "1"})
		}
		for _, argv := range argvs {
			if code, _, errs := runCLI(argv...); code != 2 {
				t.Errorf("%v: exit %d, stderr %q; want 2", argv, code, errs)
			}
		}
	}
	if code, _, errs := runCLI("call", "--key-file", key, "--url", base+"/elsewhere", "--session", testSessionID, "-c", "1"); code != 2 ||
		!strings.Contains(errs, "/v1/code URL") {
		t.Errorf("--session beside a URL that is not /v1/code: exit %d, %q", code, errs)
	}
	if seen, _ := srv.requests(); len(seen) != 0 {
		t.Fatalf("requests sent: %v", seen)
	}
}

// TestSessionShowAndClose: show prints the state (a hostile server's
// controls escaped), close exits 0 on 204; neither pays.
func TestSessionShowAndClose(t *testing.T) {
	srv, base := mustSessionServer(t)
	code, out, errs := runCLI("session", "show", "--url", base+"/v1/sessions/", testSessionID)
	if code != 0 || !strings.Contains(out, `"calls": 3`) || strings.Contains(out, "\x1b") {
		t.Fatalf("show: exit %d\n%q%s", code, out, errs)
	}
	if code, out, errs := runCLI("session", "close", "--url", base+"/v1/sessions", testSessionID); code != 0 || out != "HTTP 204\n" {
		t.Fatalf("close: exit %d\n%q%s", code, out, errs)
	}
	seen, paid := srv.requests()
	want := []string{"GET /v1/sessions/" + testSessionID, "DELETE /v1/sessions/" + testSessionID}
	if strings.Join(seen, ",") != strings.Join(want, ",") || len(paid) != 0 {
		t.Fatalf("requests %v (paid %v), want %v", seen, paid, want)
	}
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"no such session"}`))
	}))
	defer gone.Close()
	if code, out, _ := runCLI("session", "close", "--url", gone.URL+"/v1/sessions", testSessionID); code != 1 || !strings.Contains(out, "HTTP 404") {
		t.Fatalf("close of an unknown session: exit %d, %q", code, out)
	}
}

// TestSessionOpenNeverForwardsThePayment: the paid opening redirected
// elsewhere is refused, as call's paid run is.
func TestSessionOpenNeverForwardsThePayment(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isPaid(r) {
			http.Redirect(w, r, "/v1/sessions/elsewhere", http.StatusTemporaryRedirect)
			return
		}
		quoteDefaultTerms(w, `"payment required"`)
	}))
	defer srv.Close()
	code, _, errs := runCLI("session", "open", "--key-file", mustPayerKey(t), "--url", srv.URL+"/v1/sessions")
	if code != 1 || !strings.Contains(errs, "a payment is never forwarded") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// TestSessionOpenPriceDefaultsToPaymentsPrice: sessions.open_price "" is
// payments.price in every environment. Before, the empty price reached the
// gate, which quoted the opened environment's price instead (data's, when
// it sets its own).
func TestSessionOpenPriceDefaultsToPaymentsPrice(t *testing.T) {
	c := defaultConfig()
	c.Payments.Price = "0.005"
	if got := c.sessionSettings().OpenPrice; got != "0.005" {
		t.Errorf("open price %q with sessions.open_price unset, want payments.price", got)
	}
	c.Sessions.OpenPrice = "0.02"
	if got := c.sessionSettings().OpenPrice; got != "0.02" {
		t.Errorf("open price %q, want sessions.open_price", got)
	}
}
