package x402_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "sandboxd/x402"
	"sandboxd/x402/x402test"
)

// hostileServer quotes terms (v2 header, or the v1 body when v1 is set)
// and counts the requests that carry a payment; a paid request gets a 200
// and is kept in last.
type hostileServer struct {
	*httptest.Server
	paid atomic.Int32
	last atomic.Pointer[http.Header]
}

func newHostileServer(t *testing.T, terms Requirements, v1 bool) *hostileServer {
	t.Helper()
	s := &hostileServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderPaymentSignature) != "" || r.Header.Get(HeaderXPayment) != "" {
			s.paid.Add(1)
			h := r.Header.Clone()
			s.last.Store(&h)
			w.Write([]byte(`{"stdout":"1\n"}`))
			return
		}
		if v1 {
			w.WriteHeader(http.StatusPaymentRequired)
			w.Write([]byte(x402test.Wire(t, PaymentRequiredV1{X402Version: 1, Accepts: []RequirementsV1{{
				Scheme: terms.Scheme, Network: V1Network(terms.Network), MaxAmountRequired: terms.Amount,
				Resource: "http://x/v1/code", PayTo: terms.PayTo, MaxTimeoutSeconds: terms.MaxTimeoutSeconds,
				Asset: terms.Asset, Extra: terms.Extra}}})))
			return
		}
		v, _ := EncodeHeader(PaymentRequired{X402Version: 2, Resource: Resource{URL: "http://x/v1/code"}, Accepts: []Requirements{terms}})
		w.Header().Set(HeaderPaymentRequired, v)
		w.WriteHeader(http.StatusPaymentRequired)
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(s.Close)
	return s
}

// TestPayRefusesHostileTerms: a server quoting a huge amount, another
// asset, another network or another payee than allowed is refused with the
// reason, and no payment is signed or sent.
func TestPayRefusesHostileTerms(t *testing.T) {
	cases := map[string]struct {
		terms  func(*Requirements)
		policy func(*PayPolicy)
		want   string
	}{
		"huge amount":          {terms: func(r *Requirements) { r.Amount = "1000000000000" }, want: "--max-amount"},
		"one unit over":        {terms: func(r *Requirements) { r.Amount = "5001" }, want: "--max-amount"},
		"not a number":         {terms: func(r *Requirements) { r.Amount = "5e3" }, want: "not a positive number"},
		"another asset":        {terms: func(r *Requirements) { r.Asset = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" }, want: "--asset"},
		"another network":      {terms: func(r *Requirements) { r.Network = "eip155:8453" }, want: "--network"},
		"mainnet by v1 name":   {terms: func(r *Requirements) { r.Network = "base" }, want: "--network"},
		"another payee":        {terms: func(r *Requirements) { r.PayTo = x402test.Asset }, policy: func(p *PayPolicy) { p.PayTo = x402test.PayTo }, want: "--pay-to"},
		"not an exact payment": {terms: func(r *Requirements) { r.Scheme = "upto" }, want: "not an exact EVM payment"},
	}
	for name, c := range cases {
		for _, v1 := range []bool{false, true} {
			t.Run(name+" v1="+strconv.FormatBool(v1), func(t *testing.T) {
				terms := x402test.Requirements(t)
				c.terms(&terms)
				policy := DefaultPayPolicy()
				if c.policy != nil {
					c.policy(&policy)
				}
				srv := newHostileServer(t, terms, v1)
				_, err := Pay(context.Background(), srv.Client(), x402test.Key(t), srv.URL, []byte(`{}`), policy)
				var qe *QuoteRefusedError
				if !errors.As(err, &qe) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing was signed") {
					t.Fatalf("Pay = %v; want a refusal saying %q", err, c.want)
				}
				if n := srv.paid.Load(); n != 0 {
					t.Fatalf("%d paid requests sent after the refusal", n)
				}
			})
		}
	}
}

// TestPayNamedByFlags: the same terms pay once the network, asset and a
// higher maximum are named.
func TestPayNamedByFlags(t *testing.T) {
	terms := x402test.Requirements(t)
	terms.Network, terms.Asset, terms.Amount = "eip155:8453", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "20000"
	policy := DefaultPayPolicy()
	policy.Networks, policy.Assets = []string{"eip155:8453"}, []string{strings.ToLower(terms.Asset)}
	policy.MaxAmount, _ = ParsePrice("0.02")
	srv := newHostileServer(t, terms, false)
	if _, err := Pay(context.Background(), srv.Client(), x402test.Key(t), srv.URL, []byte(`{}`), policy); err != nil {
		t.Fatal(err)
	}
	if srv.paid.Load() != 1 {
		t.Fatalf("%d paid requests, want 1", srv.paid.Load())
	}
}

// TestPayCapsTheWindow: a server quoting a window of years gets an
// authorization valid for at most the policy's window.
func TestPayCapsTheWindow(t *testing.T) {
	for _, v1 := range []bool{false, true} {
		terms := x402test.Requirements(t)
		terms.MaxTimeoutSeconds = 10 * 365 * 24 * 3600
		srv := newHostileServer(t, terms, v1)
		policy := DefaultPayPolicy()
		started := time.Now()
		if _, err := Pay(context.Background(), srv.Client(), x402test.Key(t), srv.URL, []byte(`{}`), policy); err != nil {
			t.Fatal(err)
		}
		p := x402test.Decode(t, *srv.last.Load())
		before, _ := strconv.ParseInt(p.Exact.Authorization.ValidBefore, 10, 64)
		if window := time.Until(time.Unix(before, 0)); window > policy.MaxWindow || before < started.Unix()+int64(policy.MaxWindow/time.Second)-5 {
			t.Fatalf("v1=%v: signed a window of %s, want %s", v1, window, policy.MaxWindow)
		}
		if p.Accepted != nil && p.Accepted.MaxTimeoutSeconds != terms.MaxTimeoutSeconds {
			t.Errorf("the echoed terms were changed: %+v", p.Accepted)
		}
	}
}
