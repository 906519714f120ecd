package payments

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// rpcSecrets are the parts of an RPC URL that carry API keys.
var rpcSecrets = []string{"SECRETKEY123", "QUERYSECRET", "pa55word"}

// secretRPC is base's endpoint with an API key in the userinfo, the path and
// the query, as providers hand them out.
func secretRPC(base string) string {
	return strings.Replace(base, "http://", "http://user:pa55word@", 1) + "/v2/SECRETKEY123?apikey=QUERYSECRET"
}

func wantNoSecret(t *testing.T, what, text string) {
	t.Helper()
	for _, s := range rpcSecrets {
		if strings.Contains(text, s) {
			t.Errorf("%s holds the RPC URL's secret %q: %s", what, s, text)
		}
	}
}

// TestChainSettlerNeverShowsTheRPCSecret: with an API key in the RPC URL,
// neither the start-up error of a closed endpoint, nor the log, nor the
// errors of a chain that goes away after the start (net/http puts the whole
// URL in every transport error) hold the key.
func TestChainSettlerNeverShowsTheRPCSecret(t *testing.T) {
	ctx := context.Background()
	c := newFaultChain(t)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	closed := newFlakyServer(t, newRPCProxy(nil))
	closed.Down()
	cfg := faultConfig(t, c.Chain, secretRPC(closed.URL()))
	_, err := dialChain(ctx, cfg, mustRequirements(t, cfg), log)
	if err == nil {
		t.Fatal("dialChain reached a closed port")
	}
	wantNoSecret(t, "the start-up error", err.Error())
	if !strings.Contains(err.Error(), closed.URL()) {
		t.Errorf("the start-up error %q does not name the endpoint's scheme and host %s", err, closed.URL())
	}

	cfg = faultConfig(t, c.Chain, secretRPC(c.srv.URL()))
	s, err := dialChain(ctx, cfg, mustRequirements(t, cfg), log)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := mustRequirements(t, cfg)
	h, _ := c.funded(t, req)
	p := x402test.Decode(t, h)
	if err := x402.Verify(req, p, time.Now()); err != nil {
		t.Fatal(err)
	}
	c.srv.Down()
	for name, err := range map[string]error{
		"Check":  s.Check(ctx, p),
		"Settle": func() error { _, err := s.Settle(ctx, p); return err }(),
	} {
		if err == nil {
			t.Fatalf("%s succeeded with the chain down", name)
		}
		wantNoSecret(t, name+"'s error", err.Error())
	}
	wantNoSecret(t, "the log", logs.String())
	if !strings.Contains(logs.String(), "settling on chain") {
		t.Errorf("the log lacks the start line: %s", logs.String())
	}
}

// TestFacilitatorRefusalEchoesNoURL: a facilitator's free-text refusal
// (viem names the RPC URL it used) stays in the log; the caller's 402 says
// only which check failed and the x402 code.
func TestFacilitatorRefusalEchoesNoURL(t *testing.T) {
	const said = "HTTP request failed. URL: https://rpc.example/v2/SECRETKEY123 Docs: https://viem.sh/docs"
	stub, f := newStub(t)
	stub.verifyStatus, stub.verifyBody = 200, `{"isValid":false,"invalidReason":"insufficient_funds","invalidMessage":"`+said+`"}`
	stub.settleBody = `{"success":false,"errorReason":"invalid_transaction_state","errorMessage":"` + said + `"}`
	p, _ := verifiedPayment(t, false)
	checkErr := f.Check(context.Background(), p)
	_, settleErr := f.Settle(context.Background(), p)
	for name, err := range map[string]error{"/verify": checkErr, "/settle": settleErr} {
		var r *x402.RejectError
		if !errors.As(err, &r) {
			t.Fatalf("%s: %v, want a refusal", name, err)
		}
		if caller := r.Check + " (" + r.Reason + ")"; strings.Contains(caller, "rpc.example") || strings.Contains(caller, "viem.sh") {
			t.Errorf("%s: the caller's message %q echoes the facilitator's text", name, caller)
		}
		if !strings.Contains(err.Error(), "rpc.example") {
			t.Errorf("%s: the cause %q lost the facilitator's text for the log", name, err)
		}
	}
}

// TestRedactLedger: a PostgreSQL ledger URL is shown as
// its scheme, host, port and database; a password in the userinfo or in
// the query (password, sslpassword, or any other parameter) never is.
// Before, only the userinfo's password was hidden.
func TestRedactLedger(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw1@db.internal:5432/ledger?sslmode=verify-full&password=pw2&sslpassword=pw3": "postgres://db.internal:5432/ledger",
		"postgresql://db:5433/ledger?password=pw2":                                                  "postgresql://db:5433/ledger",
		"postgres://u@db/ledger?sslkey=/k&sslpassword=pw3#pw4":                                      "postgres://db/ledger",
		"data/ledger.db": "data/ledger.db",
	} {
		got := ledger.Redact(in)
		if got != want {
			t.Errorf("ledger.Redact(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(got, "pw") {
			t.Errorf("ledger.Redact(%q) = %q shows a password", in, got)
		}
	}
}
