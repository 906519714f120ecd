package payments

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// issueExample is the edited-terms attack, applied to an honest
// payment's JSON: the echoed terms name another payee, an amount of 1, an
// EIP-712 name "Evil" and a timeout of 999999, the resource a phishing
// URL, and a made-up bazaar listing. The authorization itself stays valid.
func issueExample(tb testing.TB, pp x402.PaymentPayload) string {
	tb.Helper()
	pp.Accepted.PayTo = "0x2222222222222222222222222222222222222222"
	pp.Accepted.Amount = "1"
	pp.Accepted.Extra.Name = "Evil"
	pp.Accepted.MaxTimeoutSeconds = 999999
	pp.Resource = &x402.Resource{URL: "https://phish.example/login", Description: "Free USDC", MimeType: "text/html"}
	return withMember(x402test.Wire(tb, pp), "extensions", `{"bazaar":{"info":{"input":{"type":"http","method":"GET"},"output":{"example":"visit phish.example"}}}}`)
}

// TestGateRefusesEditedTerms: the edited-terms payment, and
// each of its edits alone, is refused with a 402 naming the field before
// the settler (and so the facilitator) hears of it, and nothing is
// reserved. Before, it passed the gate and settled.
func TestGateRefusesEditedTerms(t *testing.T) {
	ctx := context.Background()
	s := &fakeSettler{settleTx: "0x1"}
	g, _ := newTestGate(t, s)
	key := x402test.Key(t)
	cases := map[string]func(*x402.PaymentPayload) string{
		"edited terms":      func(pp *x402.PaymentPayload) string { return issueExample(t, *pp) },
		"payTo":             func(pp *x402.PaymentPayload) string { pp.Accepted.PayTo = x402test.Asset; return "" },
		"amount":            func(pp *x402.PaymentPayload) string { pp.Accepted.Amount = "1"; return "" },
		"extra.name":        func(pp *x402.PaymentPayload) string { pp.Accepted.Extra.Name = "Evil"; return "" },
		"maxTimeoutSeconds": func(pp *x402.PaymentPayload) string { pp.Accepted.MaxTimeoutSeconds = 999999; return "" },
	}
	for name, edit := range cases {
		pp := x402test.Payload(t, key, g.Requirements(), nil)
		raw := edit(&pp)
		if raw == "" {
			raw = x402test.Wire(t, pp)
		}
		_, err := begin(g, ctx, paidRequest(rawHeader(x402.HeaderPaymentSignature, raw)))
		field := name
		if name == "edited terms" {
			field = "amount" // the first field that differs
		}
		wantPaymentError(t, err, "accepted."+field, "invalid_payment_requirements")
	}
	if len(s.calls) != 0 {
		t.Fatalf("the settler was asked %v about edited terms", s.calls)
	}
}

// TestFacilitatorGetsTheServiceTerms: a payment whose
// echoed terms equal the quote only when read as values ("0005000",
// addresses in other cases, a 0X prefix), with a phishing resource, a
// made-up extension and an authorization spelled the same odd ways, passes
// and settles; the facilitator's /verify and /settle get the service's own
// requirements, resource and declared extensions, and the authorization
// re-encoded from its values, none of the payer's spelling.
func TestFacilitatorGetsTheServiceTerms(t *testing.T) {
	ctx := context.Background()
	stub, f := newStub(t)
	cfg := testConfig(t)
	g, err := newGateWith(cfg, options{Settler: f, Ledger: ledgertest.OpenFile(t, cfg.Ledger), Now: func() time.Time { return x402test.Now }})
	if err != nil {
		t.Fatal(err)
	}
	req := g.Requirements()
	pp := x402test.Payload(t, x402test.Key(t), req, func(a *x402.Authorization) {
		a.Value, a.ValidAfter = "0005000", "000"
		a.From, a.To = "0X"+strings.ToUpper(a.From[2:]), strings.ToLower(a.To)
		a.Nonce = "0X" + strings.ToUpper(a.Nonce[2:])
	})
	pp.Accepted.Amount = "0005000"
	pp.Accepted.Asset = "0X" + strings.ToUpper(req.Asset[2:])
	pp.Accepted.PayTo = strings.ToLower(req.PayTo)
	raw := strings.Replace(x402test.Wire(t, pp), `"extra":{`, `"extra":{"listing":"Evil",`, 1)
	pp.Resource = &x402.Resource{URL: "https://phish.example/login"}
	raw = strings.Replace(raw, `"resource":{"url":"http://x/v1/code"`, `"resource":{"url":"https://phish.example/login"`, 1)
	raw = withMember(raw, "extensions", `{"bazaar":{"info":"phish.example"},"madeUp":{}}`)

	ours := map[string]any{"bazaar": map[string]any{"info": map[string]any{"input": map[string]any{"type": "http"}}}}
	r := paidRequest(rawHeader(x402.HeaderPaymentSignature, raw))
	r.Extensions = ours
	c, err := begin(g, ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}}); err != nil {
		t.Fatal(err)
	}
	wantExt, _ := json.Marshal(ours)
	for name, body := range map[string][]byte{"/verify": stub.lastVerify, "/settle": stub.lastSettle} {
		var got struct {
			PaymentPayload      x402.PaymentPayload `json:"paymentPayload"`
			PaymentRequirements x402.Requirements   `json:"paymentRequirements"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, payers := range []string{"phish", "Evil", "madeUp", "0005000", "0X", `"000"`} {
			if strings.Contains(string(body), payers) {
				t.Errorf("%s got the payer's %s: %s", name, payers, body)
			}
		}
		gp := got.PaymentPayload
		if got.PaymentRequirements != req || gp.Accepted != req {
			t.Errorf("%s got requirements %+v and accepted %+v, want the quote %+v", name, got.PaymentRequirements, gp.Accepted, req)
		}
		if gp.Resource == nil || *gp.Resource != x402.NewResource(testResource, description) {
			t.Errorf("%s got resource %+v, want the service's", name, gp.Resource)
		}
		if ext, _ := json.Marshal(gp.Extensions); string(ext) != string(wantExt) {
			t.Errorf("%s got extensions %s, want only the declared %s", name, ext, wantExt)
		}
		a := gp.Payload.Authorization
		if a.Value != "5000" || a.ValidAfter != "0" || a.To != req.PayTo || a.From != common.HexToAddress(a.From).Hex() ||
			a.Nonce != strings.ToLower(a.Nonce) {
			t.Errorf("%s got authorization %+v, not re-encoded", name, a)
		}
	}
}
