package payments

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// newPricedGate is a gate whose data environment costs 0.02, python the
// default 0.005.
func newPricedGate(t *testing.T, s Settler) *Gate {
	t.Helper()
	cfg := testConfig(t)
	cfg.Prices = map[string]string{sandboxd.DataEnvironment: "0.02"}
	g, err := newGateWith(cfg, options{Settler: s, Ledger: ledgertest.OpenFile(t, cfg.Ledger), Now: func() time.Time { return x402test.Now }})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// quotedAmount is the amount of the v2 terms an error carries.
func quotedAmount(t *testing.T, err error) string {
	t.Helper()
	e := wantPaymentError(t, err)
	var v2 x402.PaymentRequired
	if err := json.Unmarshal(e.Payment.Terms.V2, &v2); err != nil || len(v2.Accepts) != 1 {
		t.Fatalf("terms %s: %v", e.Payment.Terms.V2, err)
	}
	return v2.Accepts[0].Amount
}

// TestGateQuotesTheEnvironmentsPrice: a 402 quotes the price of the
// environment the request names; "" and python quote payments.price.
func TestGateQuotesTheEnvironmentsPrice(t *testing.T) {
	g := newPricedGate(t, &fakeSettler{})
	for env, want := range map[string]string{"": "5000", "python": "5000", "data": "20000"} {
		r := paidRequest(http.Header{})
		r.Environment = env
		_, err := g.Check(context.Background(), r)
		if got := quotedAmount(t, err); got != want {
			t.Errorf("environment %q: quoted %s, want %s", env, got, want)
		}
		if env == "data" && !strings.Contains(sandboxd.ErrorMessage(err), "0.02 USDC") {
			t.Errorf("data: message %q does not say 0.02 USDC", sandboxd.ErrorMessage(err))
		}
	}
	if g.RequirementsFor("data").Amount != "20000" || g.RequirementsFor("").Amount != "5000" {
		t.Errorf("RequirementsFor: data %s, default %s", g.RequirementsFor("data").Amount, g.RequirementsFor("").Amount)
	}
}

// TestCheaperPaymentRefusedForDearerEnvironment: a payment signed for
// python's price, v2 or v1, does not buy a data run that costs more; the
// refusal quotes data's price, and nothing reaches the settler. The same
// payment still buys a python run, and one for data's price buys data.
func TestCheaperPaymentRefusedForDearerEnvironment(t *testing.T) {
	s := &fakeSettler{}
	g := newPricedGate(t, s)
	cheap := x402test.Payload(t, x402test.Key(t), g.RequirementsFor("python"), nil)
	for name, h := range map[string]http.Header{
		"v2": x402test.Header(t, x402.HeaderPaymentSignature, cheap),
		"v1": x402test.Header(t, x402.HeaderXPayment, x402test.V1Of(cheap)),
	} {
		r := paidRequest(h)
		r.Environment = "data"
		_, err := g.Check(context.Background(), r)
		if got := quotedAmount(t, err); got != "20000" {
			t.Errorf("%s: refusal quotes %s, want data's 20000", name, got)
		}
	}
	if len(s.calls) != 0 {
		t.Fatalf("the settler was asked %v for a payment below the price", s.calls)
	}
	r := paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, cheap))
	r.Environment = "python"
	if _, err := g.Check(context.Background(), r); err != nil {
		t.Fatalf("python's price for python: %v", err)
	}
	dear := x402test.Payload(t, x402test.Key(t), g.RequirementsFor("data"), nil)
	r = paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, dear))
	r.Environment = "data"
	c, err := begin(g, context.Background(), r)
	if err != nil {
		t.Fatalf("data's price for data: %v", err)
	}
	c.Release(context.Background())
}

// TestEnvironmentPriceValidated: a bad environment price is refused
// naming its key.
func TestEnvironmentPriceValidated(t *testing.T) {
	cfg := testConfig(t)
	cfg.Prices = map[string]string{"data": "lots"}
	err := cfg.Validate(RunBounds{})
	if err == nil || !strings.Contains(err.Error(), "environments.data.price: ") || strings.Contains(err.Error(), "payments.price") {
		t.Fatalf("Validate: %v, want a refusal naming environments.data.price", err)
	}
}
