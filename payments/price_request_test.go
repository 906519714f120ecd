package payments

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// TestGateQuotesTheRequestsOwnPrice: a request that names its own price
// (a session's opening) is quoted that price, whatever its environment;
// a payment for the environment's lower price does not buy it, one for
// its own price does, and the authorization names the payer lower-case.
func TestGateQuotesTheRequestsOwnPrice(t *testing.T) {
	g := newPricedGate(t, &fakeSettler{})
	own := sandboxd.PaymentRequest{Price: "0.05", Environment: "data"}
	r := paidRequest(http.Header{})
	r.Price, r.Environment = own.Price, own.Environment
	_, err := g.Check(context.Background(), r)
	if got := quotedAmount(t, err); got != "50000" {
		t.Fatalf("quoted %s, want the request's own 50000", got)
	}
	if !strings.Contains(sandboxd.ErrorMessage(err), "0.05 USDC") {
		t.Fatalf("message %q", sandboxd.ErrorMessage(err))
	}
	if g.RequirementsOf(own).Amount != "50000" || g.RequirementsOf(sandboxd.PaymentRequest{Environment: "data"}).Amount != "20000" {
		t.Fatal("RequirementsOf does not follow the request's price")
	}
	key := x402test.Key(t)
	cheap := paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, key, g.RequirementsFor("data"), nil)))
	cheap.Price, cheap.Environment = own.Price, own.Environment
	if _, err := g.Check(context.Background(), cheap); sandboxd.ErrorCode(err) != sandboxd.CodePayment {
		t.Fatalf("a payment at data's price for a request priced 0.05: %v", err)
	}
	paid := paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, key, g.RequirementsOf(own), nil)))
	paid.Price, paid.Environment = own.Price, own.Environment
	auth, err := g.Check(context.Background(), paid)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.ToLower(crypto.PubkeyToAddress(key.PublicKey).Hex()); auth.Payer() != want {
		t.Fatalf("payer %q, want %q", auth.Payer(), want)
	}
	if free, _ := (FreeGate{}).Check(context.Background(), sandboxd.PaymentRequest{}); free.Payer() != "" {
		t.Fatal("the free gate names a payer")
	}
	bad := paidRequest(http.Header{})
	bad.Price = "lots"
	if _, err := g.Check(context.Background(), bad); sandboxd.ErrorCode(err) != sandboxd.CodeInternal {
		t.Fatalf("a price that does not parse: %v", err)
	}
}
