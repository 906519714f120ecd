package x402_test

import (
	"errors"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	. "sandboxd/x402"
	"sandboxd/x402/x402test"
)

// secp256k1N is the curve order, for making high-s signatures.
var secp256k1N, _ = new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)

func TestVerify(t *testing.T) {
	key, other := x402test.Key(t), x402test.Key(t)
	now := strconv.FormatInt(x402test.Now.Unix(), 10)
	after := func(s int64) string { return strconv.FormatInt(x402test.Now.Unix()+s, 10) }
	resign := func(p *PaymentPayload, mut func([]byte)) {
		sig := hexutil.MustDecode(p.Payload.Signature)
		mut(sig)
		p.Payload.Signature = hexutil.Encode(sig)
	}
	tests := []struct {
		name    string
		auth    func(*Authorization)  // changes the authorization before signing
		payload func(*PaymentPayload) // changes the payment after signing
		req     func(*Requirements)   // changes the server's terms
		v1      bool                  // send as a v1 payment
		want    string                // x402 code; "" means valid
	}{
		{name: "valid v2"},
		{name: "valid v1 with base-sepolia", v1: true},
		{name: "valid at validBefore now+6", auth: func(a *Authorization) { a.ValidBefore = after(6) }},
		{name: "valid at validAfter now", auth: func(a *Authorization) { a.ValidAfter = now }},
		{name: "valid v 27/28", payload: func(p *PaymentPayload) {
			resign(p, func(s []byte) {
				if s[64] != 27 && s[64] != 28 {
					panic("signer did not make v 27/28")
				}
			})
		}},
		{name: "valid v 0/1", payload: func(p *PaymentPayload) { resign(p, func(s []byte) { s[64] -= 27 }) }},
		{name: "valid payTo in lower case", auth: func(a *Authorization) { a.To = strings.ToLower(a.To) }},
		{name: "wrong version", payload: func(p *PaymentPayload) { p.X402Version = 3 }, want: ReasonInvalidVersion},
		{name: "wrong scheme", payload: func(p *PaymentPayload) { p.Accepted.Scheme = "upto" }, want: ReasonUnsupportedScheme},
		{name: "wrong network", payload: func(p *PaymentPayload) { p.Accepted.Network = "eip155:8453" }, want: ReasonInvalidNetwork},
		{name: "wrong v1 network name", payload: func(p *PaymentPayload) { p.Accepted.Network = "base" }, v1: true, want: ReasonInvalidNetwork},
		{name: "wrong asset", payload: func(p *PaymentPayload) { p.Accepted.Asset = x402test.PayTo }, want: ReasonRequirementsMismatch},
		{name: "wrong payTo", auth: func(a *Authorization) { a.To = "0x2222222222222222222222222222222222222222" }, want: ReasonRecipientMismatch},
		{name: "value too low", auth: func(a *Authorization) { a.Value = "4999" }, want: ReasonValueMismatch},
		{name: "value too high", auth: func(a *Authorization) { a.Value = "5001" }, want: ReasonValueMismatch},
		{name: "not yet valid", auth: func(a *Authorization) { a.ValidAfter = after(1) }, want: ReasonValidAfter},
		{name: "expired", auth: func(a *Authorization) { a.ValidBefore = after(-1) }, want: ReasonValidBefore},
		{name: "validBefore under now+6", auth: func(a *Authorization) { a.ValidBefore = after(5) }, want: ReasonValidBefore},
		{name: "missing domain name", req: func(r *Requirements) { r.Extra.Name = "" }, want: ReasonMissingDomain},
		{name: "missing domain version", req: func(r *Requirements) { r.Extra.Version = "" }, want: ReasonMissingDomain},
		{name: "wrong domain name", req: func(r *Requirements) { r.Extra.Name = "USD Coin" }, want: ReasonSignature},
		{name: "bad signature", payload: func(p *PaymentPayload) { resign(p, func(s []byte) { s[10] ^= 1 }) }, want: ReasonSignature},
		{name: "signature by another key", payload: func(p *PaymentPayload) {
			signed, err := SignAuthorization(other, x402test.Requirements(t), p.Payload.Authorization)
			if err != nil {
				panic(err)
			}
			p.Payload.Signature = signed.Signature
		}, want: ReasonSignature},
		{name: "signed value differs from sent", payload: func(p *PaymentPayload) { p.Payload.Authorization.ValidBefore = after(100) }, want: ReasonSignature},
		{name: "high s", payload: func(p *PaymentPayload) {
			resign(p, func(sig []byte) {
				s := new(big.Int).SetBytes(sig[32:64])
				new(big.Int).Sub(secp256k1N, s).FillBytes(sig[32:64])
				sig[64] = 27 + 28 - sig[64] // the flipped s recovers with the other parity
			})
		}, want: ReasonSignature},
		{name: "v 29", payload: func(p *PaymentPayload) { resign(p, func(s []byte) { s[64] = 29 }) }, want: ReasonSignature},
		{name: "short signature", payload: func(p *PaymentPayload) { p.Payload.Signature = p.Payload.Signature[:130] }, want: ReasonSignature},
		{name: "malformed signature hex", payload: func(p *PaymentPayload) { p.Payload.Signature = "0xzz" + p.Payload.Signature[4:] }, want: ReasonSignature},
		{name: "signature without 0x", payload: func(p *PaymentPayload) { p.Payload.Signature = p.Payload.Signature[2:] }, want: ReasonSignature},
		{name: "malformed nonce hex", payload: func(p *PaymentPayload) { p.Payload.Authorization.Nonce = "0x12zz" }, want: ReasonInvalidPayload},
		{name: "short nonce", payload: func(p *PaymentPayload) { p.Payload.Authorization.Nonce = "0x1234" }, want: ReasonInvalidPayload},
		{name: "malformed from", payload: func(p *PaymentPayload) { p.Payload.Authorization.From = "0xnothex" }, want: ReasonInvalidPayload},
		{name: "malformed value", payload: func(p *PaymentPayload) { p.Payload.Authorization.Value = "5e3" }, want: ReasonInvalidPayload},
		{name: "negative validAfter", payload: func(p *PaymentPayload) { p.Payload.Authorization.ValidAfter = "-1" }, want: ReasonInvalidPayload},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := x402test.Requirements(t)
			signReq := req
			if tt.req != nil {
				tt.req(&req)
			}
			pp := x402test.Payload(t, key, signReq, tt.auth)
			pp.Accepted = req // the payer echoes the entry quoted
			if tt.payload != nil {
				tt.payload(&pp)
			}
			h := x402test.Header(t, HeaderPaymentSignature, pp)
			if tt.v1 {
				h = x402test.Header(t, HeaderXPayment, x402test.V1Of(pp))
			}
			p := x402test.Decode(t, h)
			err := Verify(req, p, x402test.Now)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if p.Transfer == nil || p.Transfer.From != crypto.PubkeyToAddress(key.PublicKey) {
					t.Fatalf("Transfer not set to the payer: %+v", p.Transfer)
				}
				if v := p.Transfer.Signature[64]; v != 27 && v != 28 {
					t.Fatalf("signature v = %d, want 27 or 28", v)
				}
				return
			}
			var r *RejectError
			if !errors.As(err, &r) {
				t.Fatalf("Verify = %v, want a *RejectError with %s", err, tt.want)
			}
			if r.Reason != tt.want {
				t.Fatalf("reason = %s (%v), want %s", r.Reason, err, tt.want)
			}
			if p.Transfer != nil {
				t.Fatal("Transfer set on a refused payment")
			}
		})
	}
}

func TestTransferDigestDomain(t *testing.T) {
	// The digest's domain must follow the network's chain id and the asset.
	req := x402test.Requirements(t)
	a := Authorization{From: x402test.PayTo, To: x402test.PayTo, Value: "1", ValidAfter: "0", ValidBefore: "1",
		Nonce: "0x" + "00000000000000000000000000000000000000000000000000000000000000ff"}
	tr, err := ParseAuthorization(a)
	if err != nil {
		t.Fatal(err)
	}
	d1, err := TransferDigest(req, tr)
	if err != nil {
		t.Fatal(err)
	}
	req.Network = "eip155:8453"
	d2, err := TransferDigest(req, tr)
	if err != nil {
		t.Fatal(err)
	}
	if d1 == d2 {
		t.Fatal("digest does not depend on the chain id")
	}
}
