package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"sandboxd/x402"
)

// quoteDefaultTerms answers 402 with terms the default policy pays.
func quoteDefaultTerms(w http.ResponseWriter, message string) {
	v, _ := x402.EncodeHeader(x402.PaymentRequired{X402Version: 2, Accepts: []x402.Requirements{{
		Scheme: "exact", Network: x402.DefaultClientNetwork, Amount: "5000", Asset: x402.DefaultClientAsset,
		PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", MaxTimeoutSeconds: 60,
		Extra: x402.Extra{Name: "USDC", Version: "2"}}}})
	w.Header().Set(x402.HeaderPaymentRequired, v)
	w.WriteHeader(http.StatusPaymentRequired)
	_, _ = w.Write([]byte(`{"error":` + message + `}`))
}

// isPaid reports whether r carries a payment.
func isPaid(r *http.Request) bool {
	return r.Header.Get(x402.HeaderPaymentSignature) != "" || r.Header.Get(x402.HeaderXPayment) != ""
}

// TestCallNeverForwardsThePayment: a server that
// answers the paid retry with a 307 or 308, to another host or to its own,
// gets no payment forwarded: the call stops, says why, and the target
// never sees PAYMENT-SIGNATURE. Before, Go's client re-sent the signed
// payment to wherever the redirect pointed, which could settle it first.
func TestCallNeverForwardsThePayment(t *testing.T) {
	var stolen atomic.Int32
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isPaid(r) {
			stolen.Add(1)
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer thief.Close()
	key := mustPayerKey(t)
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, target := range []string{thief.URL + "/v1/code", "/elsewhere"} {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/elsewhere":
					if isPaid(r) {
						stolen.Add(1)
					}
					_, _ = w.Write([]byte(`{}`))
				case isPaid(r):
					http.Redirect(w, r, target, status)
				default:
					quoteDefaultTerms(w, `"payment required"`)
				}
			}))
			var stdout, stderr bytes.Buffer
			code := callCommand([]string{"--key-file", key, "--url", srv.URL + "/v1/code", "-c", "print(1)"}, &stdout, &stderr)
			srv.Close()
			if code != 1 || !strings.Contains(stderr.String(), "a payment is never forwarded") {
				t.Errorf("%d to %s: exit %d, stderr %q; want a refusal that says why", status, target, code, stderr.String())
			}
		}
	}
	if n := stolen.Load(); n != 0 {
		t.Fatalf("the payment was forwarded %d times", n)
	}
}

// TestCallFollowsOnlySameOriginRedirects: the unpaid request
// follows a redirect within its origin, and refuses one to another origin,
// saying so, before that origin is reached.
func TestCallFollowsOnlySameOriginRedirects(t *testing.T) {
	var reached atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		quoteDefaultTerms(w, `"pay me instead"`)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/old":
			http.Redirect(w, r, "/v1/code", http.StatusPermanentRedirect)
		case "/away":
			http.Redirect(w, r, other.URL+"/v1/code", http.StatusTemporaryRedirect)
		default:
			_, _ = w.Write([]byte(`{"stdout":"1\n"}`))
		}
	}))
	defer srv.Close()
	key := mustPayerKey(t)
	var stdout, stderr bytes.Buffer
	if code := callCommand([]string{"--key-file", key, "--url", srv.URL + "/old", "-c", "print(1)"}, &stdout, &stderr); code != 0 {
		t.Fatalf("same-origin redirect: exit %d, stderr %q", code, stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	code := callCommand([]string{"--key-file", key, "--url", srv.URL + "/away", "-c", "print(1)"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "same origin") {
		t.Fatalf("redirect to another origin: exit %d, stderr %q; want a refusal naming the rule", code, stderr.String())
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the other origin was reached %d times", n)
	}
}

// TestCallCannotForgeAPaidLine: a body that is not JSON
// cannot start a line of its own (its newlines are escaped), and bidi and
// other format characters (Unicode Cf) are escaped wherever the server's
// text is printed: the body, JSON or not, and the refusal message. Before,
// a text body printed "paid: ..." lines of the server's choosing.
func TestCallCannotForgeAPaidLine(t *testing.T) {
	const forged = "paid: payer 0xforged, amount 5000 atomic units, network eip155:84532, transaction 0xfeed"
	for name, body := range map[string]string{
		"text": "done\n" + forged + "\r\n\u202eexe.txt\u2028" + forged,
		"json": `{"stdout":"\u202e` + "\u202e" + `evil\u2066","note":"` + "\u200b" + `"}`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(body))
		}))
		var stdout, stderr bytes.Buffer
		code := callCommand([]string{"--key-file", mustPayerKey(t), "--url", srv.URL, "-c", "print(1)"}, &stdout, &stderr)
		srv.Close()
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", name, code, stderr.String())
		}
		out := stdout.String()
		if n := strings.Count("\n"+out, "\npaid:"); n != 1 || !strings.Contains(out, "\npaid: nothing") {
			t.Errorf("%s: %d lines start with paid:, want only the real one:\n%s", name, n, out)
		}
		if strings.ContainsAny(out, "\u202e\u2066\u200b\u2028\r") {
			t.Errorf("%s: stdout %q keeps format characters", name, out)
		}
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		quoteDefaultTerms(w, `"no\n`+forged+`\u202e"`)
	}))
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	if code := callCommand([]string{"--key-file", mustPayerKey(t), "--url", srv.URL, "-c", "print(1)"}, &stdout, &stderr); code != 1 {
		t.Fatalf("refusal: exit %d", code)
	}
	if strings.Count(stderr.String(), "\n") != 1 || strings.Contains(stderr.String(), "\u202e") {
		t.Fatalf("refusal printed as %q: want one line, format characters escaped", stderr.String())
	}
}
