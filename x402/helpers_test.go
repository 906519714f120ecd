package x402

import (
	"crypto/ecdsa"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
)

// testNow is the fixed clock of the unit tests.
var testNow = time.Unix(1_800_000_000, 0)

const (
	testAsset = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	testPayTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
)

// testRequirements are the terms the unit tests pay: 0.005 USDC on Base
// Sepolia, valid for 120 s.
func testRequirements(tb testing.TB) Requirements {
	tb.Helper()
	return Requirements{
		Scheme:            SchemeExact,
		Network:           "eip155:84532",
		Amount:            "5000",
		Asset:             testAsset,
		PayTo:             testPayTo,
		MaxTimeoutSeconds: 120,
		Extra:             Extra{Name: "USDC", Version: "2"},
	}
}

// mustKey returns a fresh private key.
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
func mustPayload(tb testing.TB, key *ecdsa.PrivateKey, req Requirements, mutate func(*Authorization)) PaymentPayload {
	tb.Helper()
	a, err := NewAuthorization(key, req, testNow)
	if err != nil {
		tb.Fatal(err)
	}
	if mutate != nil {
		mutate(&a)
	}
	exact, err := SignAuthorization(key, req, a)
	if err != nil {
		tb.Fatal(err)
	}
	return PaymentPayload{X402Version: 2, Resource: &Resource{URL: "http://x/v1/code"}, Accepted: req, Payload: exact}
}

// mustHeader encodes a payment into the header it travels in.
func mustHeader(tb testing.TB, name string, payment any) http.Header {
	tb.Helper()
	v, err := EncodeHeader(payment)
	if err != nil {
		tb.Fatal(err)
	}
	h := http.Header{}
	h.Set(name, v)
	return h
}

// mustDecode decodes a payment header value, failing the test on error.
func mustDecode(tb testing.TB, h http.Header) *Payment {
	tb.Helper()
	p, err := DecodePaymentHeader(h)
	if err != nil {
		tb.Fatal(err)
	}
	if p == nil {
		tb.Fatal("no payment header")
	}
	return p
}

// v1Of is p in its v1 form.
func v1Of(p PaymentPayload) PaymentPayloadV1 {
	return PaymentPayloadV1{X402Version: 1, Scheme: p.Accepted.Scheme, Network: V1Network(p.Accepted.Network), Payload: p.Payload}
}

// mustWire is v's JSON encoding, as json.Marshal writes it.
func mustWire(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
