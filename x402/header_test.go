package x402_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"

	. "sandboxd/x402"
	"sandboxd/x402/x402test"
)

func TestDecodePaymentHeader(t *testing.T) {
	key := x402test.Key(t)
	pp := x402test.Payload(t, key, x402test.Requirements(t), nil)

	t.Run("v2", func(t *testing.T) {
		p := x402test.Decode(t, x402test.Header(t, HeaderPaymentSignature, pp))
		if p.Version != 2 || p.Scheme != SchemeExact || p.Network != "eip155:84532" || p.Accepted == nil || p.Resource == nil {
			t.Fatalf("decoded %+v", p)
		}
		if p.Exact != pp.Payload {
			t.Fatalf("payload %+v, want %+v", p.Exact, pp.Payload)
		}
	})
	t.Run("v1", func(t *testing.T) {
		p := x402test.Decode(t, x402test.Header(t, HeaderXPayment, x402test.V1Of(pp)))
		if p.Version != 1 || p.Network != "base-sepolia" || p.Accepted != nil || p.Exact != pp.Payload {
			t.Fatalf("decoded %+v", p)
		}
	})
	t.Run("v2 header wins over v1", func(t *testing.T) {
		h := x402test.Header(t, HeaderPaymentSignature, pp)
		v1, _ := EncodeHeader(x402test.V1Of(pp))
		h.Set(HeaderXPayment, v1)
		if p := x402test.Decode(t, h); p.Version != 2 {
			t.Fatalf("version %d, want 2", p.Version)
		}
	})
	t.Run("unpadded base64", func(t *testing.T) {
		v, _ := EncodeHeader(pp)
		h := http.Header{}
		h.Set("payment-signature", strings.TrimRight(v, "="))
		x402test.Decode(t, h)
	})
	t.Run("absent", func(t *testing.T) {
		p, err := DecodePaymentHeader(http.Header{})
		if p != nil || err != nil {
			t.Fatalf("got %v, %v; want nil, nil", p, err)
		}
	})

	bad := map[string]string{
		"bad base64":      "%%%not base64%%%",
		"bad JSON":        base64.StdEncoding.EncodeToString([]byte("{not json")),
		"JSON not object": base64.StdEncoding.EncodeToString([]byte(`"a string"`)),
		"no version":      base64.StdEncoding.EncodeToString([]byte(`{"payload":{}}`)),
		"wrong types":     base64.StdEncoding.EncodeToString([]byte(`{"x402Version":2,"payload":{"signature":5}}`)),
		"too large":       strings.Repeat("A", MaxHeaderBytes+4),
	}
	for name, value := range bad {
		for _, header := range []string{HeaderPaymentSignature, HeaderXPayment} {
			t.Run(name+" "+header, func(t *testing.T) {
				h := http.Header{}
				h.Set(header, value)
				_, err := DecodePaymentHeader(h)
				var he *HeaderError
				if !errors.As(err, &he) || he.Header != header || errors.Unwrap(he) != he.Err {
					t.Fatalf("err %v, want a *HeaderError naming %s", err, header)
				}
				if !strings.Contains(err.Error(), header) {
					t.Fatalf("message %q does not name %s", err, header)
				}
			})
		}
	}
}

func TestNetworks(t *testing.T) {
	for in, want := range map[string]string{"base-sepolia": "eip155:84532", "base": "eip155:8453", "eip155:1337": "eip155:1337"} {
		if got := CanonicalNetwork(in); got != want {
			t.Errorf("CanonicalNetwork(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"eip155:84532": "base-sepolia", "eip155:8453": "base", "eip155:1337": "eip155:1337"} {
		if got := V1Network(in); got != want {
			t.Errorf("V1Network(%q) = %q, want %q", in, got, want)
		}
	}
	if id, err := ChainID("base-sepolia"); err != nil || id.Int64() != 84532 {
		t.Errorf("ChainID(base-sepolia) = %v, %v", id, err)
	}
	for _, bad := range []string{"solana:mainnet", "eip155:", "eip155:0", "eip155:x", "eip155:01"} {
		if _, err := ChainID(bad); err == nil {
			t.Errorf("ChainID(%q) passed", bad)
		}
	}
}

// TestDecodeHeaderRefusesDeepJSON: an x402 header a server sends the client
// (PAYMENT-REQUIRED, PAYMENT-RESPONSE) nested 100,000 deep is refused as too
// deep, naming the limit, before it is decoded.
func TestDecodeHeaderRefusesDeepJSON(t *testing.T) {
	value := base64.StdEncoding.EncodeToString([]byte(`{"x402Version":2,"accepts":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`))
	var v map[string]any
	err := DecodeHeader(value, &v)
	if err == nil || !strings.Contains(err.Error(), "nesting is too deep") || !strings.Contains(err.Error(), "limit is 32 levels") {
		t.Fatalf("DecodeHeader = %v, want the nesting refused with its limit", err)
	}
}
