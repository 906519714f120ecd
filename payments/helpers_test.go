package payments

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd"
	"sandboxd/x402"
)

// testNow is the fixed clock of the unit tests.
var testNow = time.Unix(1_800_000_000, 0)

const (
	testAsset = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	testPayTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
)

// testConfig is a valid facilitator configuration with its ledger in a
// temporary directory.
func testConfig(tb testing.TB) Config {
	tb.Helper()
	return Config{
		Network:           "eip155:84532",
		Asset:             testAsset,
		AssetName:         "USDC",
		AssetVersion:      "2",
		Price:             "0.005",
		PayTo:             testPayTo,
		MaxTimeoutSeconds: 120,
		Settlement:        SettleFacilitator,
		FacilitatorURL:    "http://127.0.0.1:1/facilitator",
		Ledger:            filepath.Join(tb.TempDir(), "sub", "ledger.db"),
	}
}

func testRequirements(tb testing.TB) x402.Requirements {
	tb.Helper()
	req, err := testConfig(tb).Requirements()
	if err != nil {
		tb.Fatal(err)
	}
	return req
}

func mustKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := crypto.GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

// mustPayload returns a valid v2 payment of req by key at testNow, after
// mutate (if any) changed its authorization before signing.
func mustPayload(tb testing.TB, key *ecdsa.PrivateKey, req x402.Requirements, mutate func(*x402.Authorization)) x402.PaymentPayload {
	tb.Helper()
	a, err := x402.NewAuthorization(key, req, testNow)
	if err != nil {
		tb.Fatal(err)
	}
	if mutate != nil {
		mutate(&a)
	}
	exact, err := x402.SignAuthorization(key, req, a)
	if err != nil {
		tb.Fatal(err)
	}
	return x402.PaymentPayload{X402Version: 2, Resource: &x402.Resource{URL: "http://x/v1/code"}, Accepted: req, Payload: exact}
}

// mustHeader encodes a payment into the header it travels in.
func mustHeader(tb testing.TB, name string, payment any) http.Header {
	tb.Helper()
	v, err := x402.EncodeHeader(payment)
	if err != nil {
		tb.Fatal(err)
	}
	h := http.Header{}
	h.Set(name, v)
	return h
}

// mustDecode decodes a payment header value, failing the test on error.
func mustDecode(tb testing.TB, h http.Header) *x402.Payment {
	tb.Helper()
	p, err := x402.DecodePaymentHeader(h)
	if err != nil {
		tb.Fatal(err)
	}
	if p == nil {
		tb.Fatal("no payment header")
	}
	return p
}

func v1Of(p x402.PaymentPayload) x402.PaymentPayloadV1 {
	return x402.PaymentPayloadV1{X402Version: 1, Scheme: p.Accepted.Scheme, Network: x402.V1Network(p.Accepted.Network), Payload: p.Payload}
}

// begin runs both phases of the gate, Check then Reserve, as httpapi does
// around the sandbox slot.
func begin(g *Gate, ctx context.Context, r sandboxd.PaymentRequest) (sandboxd.Charge, error) {
	a, err := g.Check(ctx, r)
	if err != nil {
		return nil, err
	}
	return a.Reserve(ctx)
}

// wantPending asserts the answer of a settlement whose outcome is unknown:
// no answer headers, CodePending (202, never a 402 inviting a second
// payment) with a PAYMENT-RESPONSE saying settlement_pending and naming tx,
// and a body carrying the same; the row stays settling, marked pending.
func wantPending(tb testing.TB, l Ledger, entry Entry, out http.Header, err error, tx string) Entry {
	tb.Helper()
	if out != nil {
		tb.Fatalf("headers %v with an unknown settlement: the answer would be delivered", out)
	}
	var e *sandboxd.Error
	if !errors.As(err, &e) || e.Code != sandboxd.CodePending {
		tb.Fatalf("error %v, want CodePending", err)
	}
	if e.Header.Get(x402.HeaderPaymentRequired) != "" || !strings.Contains(e.Message, "do not pay again") {
		tb.Fatalf("a pending settlement answered like a refusal: %q, headers %v", e.Message, e.Header)
	}
	var sr x402.SettleResponse
	if err := x402.DecodeHeader(e.Header.Get(x402.HeaderPaymentResponse), &sr); err != nil {
		tb.Fatal(err)
	}
	body, ok := e.Body.(pendingBody)
	if sr.Success || sr.ErrorReason != ReasonSettlementPending || sr.Transaction != tx ||
		!ok || body.Status != ReasonSettlementPending || body.Transaction != tx || body.Error == "" {
		tb.Fatalf("settle response %+v, body %+v; want settlement_pending with transaction %q", sr, e.Body, tx)
	}
	row := wantStatus(tb, l, entry, StatusSettling)
	if row.Reason != ReasonSettlementPending || row.TxHash != tx {
		tb.Fatalf("row %+v, want settling, pending, tx %q", row, tx)
	}
	return row
}
