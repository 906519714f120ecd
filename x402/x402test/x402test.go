// Package x402test holds the fixtures of the tests that pay over x402: a
// fixed clock, the test asset and payee, the terms they pay, and helpers
// that make keys, sign payments and put them into headers, failing the test
// on error. It is imported by the tests of x402 (package x402_test) and of
// payments; product code never imports it.
package x402test

import (
	"crypto/ecdsa"
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd/x402"
)

// Now is the fixed clock of the unit tests.
var Now = time.Unix(1_800_000_000, 0)

const (
	// Asset is the token the tests pay in (USDC on Base Sepolia).
	Asset = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	// PayTo is the payee of the tests.
	PayTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
)

// Requirements are the terms the unit tests pay: 0.005 USDC on Base
// Sepolia, valid for 120 s.
func Requirements(tb testing.TB) x402.Requirements {
	tb.Helper()
	return x402.Requirements{
		Scheme:            x402.SchemeExact,
		Network:           "eip155:84532",
		Amount:            "5000",
		Asset:             Asset,
		PayTo:             PayTo,
		MaxTimeoutSeconds: 120,
		Extra:             x402.Extra{Name: "USDC", Version: "2"},
	}
}

// Key returns a fresh private key.
func Key(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := crypto.GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

// Payload returns a valid v2 payment of req by key at Now, after mutate
// (if any) changed its authorization before signing.
func Payload(tb testing.TB, key *ecdsa.PrivateKey, req x402.Requirements, mutate func(*x402.Authorization)) x402.PaymentPayload {
	tb.Helper()
	a, err := x402.NewAuthorization(key, req, Now)
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

// Header encodes a payment into the header name it travels in.
func Header(tb testing.TB, name string, payment any) http.Header {
	tb.Helper()
	v, err := x402.EncodeHeader(payment)
	if err != nil {
		tb.Fatal(err)
	}
	h := http.Header{}
	h.Set(name, v)
	return h
}

// Decode decodes the payment header of h, failing the test on error or
// when there is none.
func Decode(tb testing.TB, h http.Header) *x402.Payment {
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

// V1Of is p in its v1 form.
func V1Of(p x402.PaymentPayload) x402.PaymentPayloadV1 {
	return x402.PaymentPayloadV1{X402Version: 1, Scheme: p.Accepted.Scheme, Network: x402.V1Network(p.Accepted.Network), Payload: p.Payload}
}

// Wire is v's JSON encoding, as json.Marshal writes it.
func Wire(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// ReadJSON decodes the JSON file at path (a test's testdata vectors) into v.
func ReadJSON(tb testing.TB, path string, v any) {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
}
