// Package channeltest holds a batch-settlement seller for the tests of the
// paying client: an HTTP server that quotes, verifies and answers as the
// design's seller does, with package channel's checks, and keeps what it
// was paid. Product code never imports it.
package channeltest

import (
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// Price is the price per call the seller quotes by default: 0.005 USDC,
// what the paying client pays by default.
const Price = "5000"

// Knobs are what a test changes in a seller between calls.
type Knobs struct {
	// Exact is the exact entry quoted; the batch-settlement entry is the
	// same with Extra's channel terms.
	Exact x402.Requirements
	// Extra is the batch-settlement entry's channel terms.
	Extra channel.Extra
	// NoBatch quotes the exact entry only.
	NoBatch bool
	// Forger, when set, signs the voucherState of a correction instead of
	// the payer's voucher being shown.
	Forger *ecdsa.PrivateKey
	// Report, when set, is the chargedAmount reported for a call instead
	// of the price charged.
	Report *big.Int
	// Delay holds each paid request this long before it is looked at.
	Delay time.Duration
	// Drop is how many of the next paid requests are taken and answered
	// but have their connection closed instead of the answer written: the
	// answer is lost on the way. Each one drop lowers it by one.
	Drop int
	// Replay answers a payment header taken before, or its payment id,
	// with the answer it had, marked Idempotent-Replayed, as the service
	// does; without it the seller keeps no answers.
	Replay bool
	// PaymentID declares the payment-identifier extension in the terms,
	// as the service does.
	PaymentID bool
}

// Account is what the seller keeps of one channel.
type Account struct {
	// Charged is the running total charged, Balance the channel's.
	Charged, Balance *big.Int
	// Max and Signature are the last voucher taken.
	Max       *big.Int
	Signature []byte
}

// Seller is a batch-settlement seller on an httptest server. A POST
// without payment, or a GET of /v1/channel without one, is answered 402
// with the terms (exact, then batch-settlement); a paid request is
// verified: accepted is the batch entry, the payload decodes
// (channel.Decode), its config is the terms' (CheckConfig), its deposit's
// authorization verifies (VerifyDeposit), its voucher is signed by the
// payer and its total is the running total plus the price
// (VerifyVoucher). A wrong total is answered with the corrective 402
// (channel.Corrective, showing the last voucher taken); any other refusal
// with a 402 naming the reason. A payment taken is answered 200 with a
// PAYMENT-RESPONSE as the design's (chargedAmount, channelState); a
// refund returns balance less charged. An exact payment is taken as is.
// With Knobs.Replay a 200 is kept and given again, marked
// Idempotent-Replayed, to the same payment header or payment id sent
// again (serve); Knobs.Drop loses answers on the way.
type Seller struct {
	*httptest.Server
	tb testing.TB

	mu          sync.Mutex
	knobs       Knobs
	accounts    map[common.Hash]*Account
	payments    []channel.Payload
	paid        int
	correctives int
	// headers are the payment headers of the paid requests, in order;
	// kept are the answers taken, by payment header and by payment id.
	headers []string
	kept    map[string]*kept
}

// NewSeller starts a seller quoting Price in USDC on Base Sepolia (the
// client's defaults), with a fresh receiver authorizer, the minimum
// withdraw delay and the official default minimum deposit (10 prices).
func NewSeller(tb testing.TB) *Seller {
	tb.Helper()
	authorizer, err := crypto.GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	price, _ := new(big.Int).SetString(Price, 10)
	s := &Seller{tb: tb, accounts: map[common.Hash]*Account{}, kept: map[string]*kept{}, knobs: Knobs{
		Exact: x402.Requirements{Scheme: x402.SchemeExact, Network: x402.DefaultClientNetwork, Amount: Price,
			Asset: x402.DefaultClientAsset, PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", MaxTimeoutSeconds: 60,
			Extra: x402.Extra{Name: "USDC", Version: "2"}},
		Extra: channel.Extra{Name: "USDC", Version: "2", ReceiverAuthorizer: crypto.PubkeyToAddress(authorizer.PublicKey),
			WithdrawDelay: channel.MinWithdrawDelay, MinDeposit: new(big.Int).Mul(price, big.NewInt(10))},
	}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.Close)
	return s
}

// Set changes the seller's knobs.
func (s *Seller) Set(f func(*Knobs)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.knobs)
}

// Knobs are the seller's knobs now.
func (s *Seller) Knobs() Knobs {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.knobs
}

// Entry is the batch-settlement entry quoted now.
func (s *Seller) Entry() x402.Requirements {
	s.mu.Lock()
	defer s.mu.Unlock()
	return channel.Entry(s.knobs.Exact, s.knobs.Extra)
}

// Payments are the channel payloads taken, in order, verified.
func (s *Seller) Payments() []channel.Payload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]channel.Payload(nil), s.payments...)
}

// Paid is how many requests carried a payment, taken or not.
func (s *Seller) Paid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paid
}

// Correctives is how many corrective 402s were answered.
func (s *Seller) Correctives() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.correctives
}

// Account is a copy of what the seller keeps of channel id; nil when it
// was never paid through.
func (s *Seller) Account(id common.Hash) *Account {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accounts[id]
	if a == nil {
		return nil
	}
	c := *a
	return &c
}

// handle answers one request.
func (s *Seller) handle(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	k := s.knobs
	s.mu.Unlock()
	refund := r.Method == http.MethodGet && r.URL.Path == "/v1/channel"
	if r.Method != http.MethodPost && !refund {
		http.Error(w, `{"error":"method not allowed"}`, http.StatusMethodNotAllowed)
		return
	}
	value := r.Header.Get(x402.HeaderPaymentSignature)
	if value == "" {
		s.quote(w, k, "payment required", nil)
		return
	}
	time.Sleep(k.Delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	var pp struct {
		X402Version int                        `json:"x402Version"`
		Payload     json.RawMessage            `json:"payload"`
		Extensions  map[string]json.RawMessage `json:"extensions"`
		Resource    *x402.Resource             `json:"resource"`
		Accepted    x402.Requirements          `json:"accepted"`
	}
	if err := x402.DecodeHeader(value, &pp); err != nil {
		http.Error(w, `{"error":"the payment does not decode"}`, http.StatusBadRequest)
		return
	}
	if pp.Accepted.Scheme == x402.SchemeExact {
		s.answer(w, map[string]any{"success": true, "transaction": "0x" + common.Bytes2Hex(make([]byte, 32)),
			"network": pp.Accepted.Network})
		return
	}
	s.take(w, k, refund, pp.Accepted, pp.Payload)
}

// quote answers 402 with the terms, entry in place of the batch entry when
// set (a correction), and error as the terms' error.
func (s *Seller) quote(w http.ResponseWriter, k Knobs, message string, entry *x402.Requirements) {
	accepts := []x402.Requirements{k.Exact}
	if entry != nil {
		accepts = append(accepts, *entry)
	} else if !k.NoBatch {
		accepts = append(accepts, channel.Entry(k.Exact, k.Extra))
	}
	extensions := map[string]any{}
	if k.PaymentID {
		extensions[x402.ExtensionPaymentIdentifier] = x402.PaymentIdentifierDeclaration()
	}
	v, err := x402.EncodeHeader(x402.PaymentRequired{X402Version: 2, Error: message,
		Resource: x402.NewResource("http://seller.test/v1/code", "a run"), Accepts: accepts, Extensions: extensions})
	if err != nil {
		s.tb.Error(err)
	}
	w.Header().Set(x402.HeaderPaymentRequired, v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusPaymentRequired)
	b, _ := json.Marshal(map[string]string{"error": message})
	_, _ = w.Write(b)
}

// answer answers 200 with report as PAYMENT-RESPONSE.
func (s *Seller) answer(w http.ResponseWriter, report map[string]any) {
	v, err := x402.EncodeHeader(report)
	if err != nil {
		s.tb.Error(err)
	}
	w.Header().Set(x402.HeaderPaymentResponse, v)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok","stdout":"paid\n"}`))
}
