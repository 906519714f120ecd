package payments

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"sandboxd"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// withMember returns the JSON object obj with member `"key":value` added
// at its end, as a hostile payer writes it by hand.
func withMember(obj, key, value string) string {
	return strings.TrimSuffix(obj, "}") + `,"` + key + `":` + value + "}"
}

// rawHeader puts raw JSON into header name, base64-encoded.
func rawHeader(name, raw string) http.Header {
	h := http.Header{}
	h.Set(name, base64.StdEncoding.EncodeToString([]byte(raw)))
	return h
}

// TestDecodeRefusesTwoReadings sends payments that Go's decoder and a
// JavaScript facilitator would read differently (a key twice, in any case,
// at any depth) or that carry keys x402 does not have where its schema is
// closed: each is a 400 (CodeInvalid) naming the key.
func TestDecodeRefusesTwoReadings(t *testing.T) {
	req := testRequirements(t)
	b := x402test.Payload(t, x402test.Key(t), req, nil)     // the payer's real payment
	decoy := x402test.Payload(t, x402test.Key(t), req, nil) // signed by a throwaway key
	v2 := x402test.Wire(t, b)
	v1 := x402test.Wire(t, x402test.V1Of(b))
	auth := x402test.Wire(t, b.Payload.Authorization)
	exact := func(authJSON string) string {
		return `{"signature":"` + b.Payload.Signature + `","authorization":` + authJSON + `}`
	}
	replace := func(doc, old, repl string) string {
		if !strings.Contains(doc, old) {
			t.Fatalf("%s not in %s", old, doc)
		}
		return strings.Replace(doc, old, repl, 1)
	}
	cases := []struct {
		name, header, raw, key string
	}{
		{"decoy Payload after payload", x402.HeaderPaymentSignature, withMember(v2, "Payload", x402test.Wire(t, decoy.Payload)), "Payload"},
		{"decoy payload twice", x402.HeaderPaymentSignature, withMember(v2, "payload", x402test.Wire(t, decoy.Payload)), "payload"},
		{"decoy PAYLOAD in v1", x402.HeaderXPayment, withMember(v1, "PAYLOAD", x402test.Wire(t, decoy.Payload)), "PAYLOAD"},
		{"nested duplicate value", x402.HeaderPaymentSignature,
			replace(v2, auth, withMember(auth, "Value", `"1"`)), "Value"},
		{"nested exact duplicate nonce", x402.HeaderPaymentSignature,
			replace(v2, auth, withMember(auth, "nonce", `"`+decoy.Payload.Authorization.Nonce+`"`)), "nonce"},
		{"duplicate in accepted", x402.HeaderPaymentSignature, replace(v2, `"payTo":`, `"PayTo":"0x0000000000000000000000000000000000000001","payTo":`), "payTo"},
		{"duplicate in open extensions", x402.HeaderPaymentSignature, withMember(v2, "extensions", `{"a":1,"A":2}`), "A"},
		{"duplicate folded in open extensions", x402.HeaderPaymentSignature, withMember(v2, "extensions", `{"s":1,"ſ":2}`), "ſ"},
		{"long s for s in accepted", x402.HeaderPaymentSignature, replace(v2, `"scheme":`, `"ſcheme":`), "ſcheme"},
		{"duplicate deep in an extension array", x402.HeaderPaymentSignature, withMember(v2, "extensions", `{"a":[{"k":1,"K":2}]}`), "K"},
		{"duplicate in open extra", x402.HeaderPaymentSignature, replace(v2, `"extra":{`, `"extra":{"x":1,"x":2,`), "x"},
		{"unknown top-level key", x402.HeaderPaymentSignature, withMember(v2, "amount", `"1"`), "amount"},
		{"unknown v1 key", x402.HeaderXPayment, withMember(v1, "accepted", `{}`), "accepted"},
		{"unknown key in payload", x402.HeaderPaymentSignature, replace(v2, `"payload":{`, `"payload":{"extra":1,`), "extra"},
		{"unknown key in authorization", x402.HeaderPaymentSignature, replace(v2, auth, withMember(auth, "chainId", "1")), "chainId"},
		{"unknown key in resource", x402.HeaderPaymentSignature, replace(v2, `"resource":{`, `"resource":{"payTo":"x",`), "payTo"},
		{"unknown key in accepted", x402.HeaderPaymentSignature, replace(v2, `"accepted":{`, `"accepted":{"value":"1",`), "value"},
		{"case variant alone", x402.HeaderPaymentSignature, replace(v2, `"payload":`, `"Payload":`), "Payload"},
		{"case variant in v1 payload", x402.HeaderXPayment, replace(v1, exact(auth), replace(exact(auth), `"signature"`, `"Signature"`)), "Signature"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := x402.DecodePaymentHeader(rawHeader(c.header, c.raw))
			err = headerInvalid(err) // the gate's classification
			if code := sandboxd.ErrorCode(err); code != sandboxd.CodeInvalid {
				t.Fatalf("decoded %+v, %v (code %s); want an invalid-request error", p, err, code)
			}
			msg := sandboxd.ErrorMessage(err)
			if !strings.Contains(msg, `"`+c.key+`"`) || !strings.Contains(msg, c.header) {
				t.Errorf("message %q does not name the key %q and the header", msg, c.key)
			}
			if !strings.Contains(msg, "once") && !strings.Contains(msg, "remove it") && !strings.Contains(msg, "spelled") {
				t.Errorf("message %q does not say what to do", msg)
			}
		})
	}
}

// TestDecodeKeepsOpenObjectsOpen decodes what the official client sends
// (extensions, resource, accepted with its extra) and members x402 leaves
// open, and re-encodes them unchanged.
func TestDecodeKeepsOpenObjectsOpen(t *testing.T) {
	req := testRequirements(t)
	pp := x402test.Payload(t, x402test.Key(t), req, nil)
	raw := x402test.Wire(t, pp)
	raw = strings.Replace(raw, `"extra":{`, `"extra":{"assetTransferMethod":"eip3009","n":12345678901234567890,`, 1)
	raw = withMember(raw, "extensions", `{"bazaar":{"info":{"input":{"x":[1,{"y":null}]}}},"empty":{}}`)
	p, err := x402.DecodePaymentHeader(rawHeader(x402.HeaderPaymentSignature, raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := x402.Verify(req, p, x402test.Now); err != nil {
		t.Fatal(err)
	}
	// A facilitator gets the service's own terms, none of the payer's
	// copies.
	got := x402test.Wire(t, facilitatorPayload(p))
	for _, payers := range []string{`"assetTransferMethod"`, `12345678901234567890`, `"bazaar"`, `"empty"`, `"http://x/v1/code"`} {
		if strings.Contains(got, payers) {
			t.Errorf("re-encoding %s forwards the payer's %s", got, payers)
		}
	}
	// Exactly what the official client sends: no extensions member, or {}.
	for _, ext := range []string{"", `{}`} {
		raw := x402test.Wire(t, pp)
		if ext != "" {
			raw = withMember(raw, "extensions", ext)
		}
		if _, err := x402.DecodePaymentHeader(rawHeader(x402.HeaderPaymentSignature, raw)); err != nil {
			t.Errorf("extensions %q: %v", ext, err)
		}
	}
}

// TestFacilitatorGetsWhatWasVerified decodes a payment whose bytes are not
// canonical (spacing, key order, a v1-style network name is not allowed in
// v2 so only layout differs) and checks that the facilitator's /verify and
// /settle receive the canonical encoding of exactly the verified payment,
// never the payer's bytes.
func TestFacilitatorGetsWhatWasVerified(t *testing.T) {
	req := testRequirements(t)
	pp := x402test.Payload(t, x402test.Key(t), req, nil)
	var m map[string]any
	if err := json.Unmarshal([]byte(x402test.Wire(t, pp)), &m); err != nil {
		t.Fatal(err)
	}
	m["extensions"] = map[string]any{}
	indented, _ := json.MarshalIndent(m, " ", "\t") // keys sorted, spaced: other bytes, same payment
	p, err := x402.DecodePaymentHeader(rawHeader(x402.HeaderPaymentSignature, string(indented)))
	if err != nil {
		t.Fatal(err)
	}
	if err := x402.Verify(req, p, x402test.Now); err != nil {
		t.Fatal(err)
	}
	p.Quoted = x402.Quoted{Resource: x402.NewResource("https://sandbox.example/v1/code", description)}
	stub, f := newStub(t)
	ctx := context.Background()
	if err := f.Check(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Settle(ctx, p); err != nil {
		t.Fatal(err)
	}
	want := x402.PaymentPayload{X402Version: 2, Resource: &p.Quoted.Resource, Accepted: *p.Accepted, Payload: p.Exact}
	for name, body := range map[string][]byte{"/verify": stub.lastVerify, "/settle": stub.lastSettle} {
		var got struct {
			PaymentPayload      json.RawMessage   `json:"paymentPayload"`
			PaymentRequirements x402.Requirements `json:"paymentRequirements"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(body), "\t") {
			t.Errorf("%s got the payer's bytes: %s", name, body)
		}
		if string(got.PaymentPayload) != x402test.Wire(t, want) {
			t.Errorf("%s got\n %s\nwant the verified payment\n %s", name, got.PaymentPayload, x402test.Wire(t, want))
		}
		if got.PaymentRequirements != p.Requirements {
			t.Errorf("%s got requirements %+v, want %+v", name, got.PaymentRequirements, p.Requirements)
		}
		var back x402.PaymentPayload
		if err := json.Unmarshal(got.PaymentPayload, &back); err != nil || back.Payload != p.Exact || back.Payload.Authorization.From != p.Transfer.From.Hex() {
			t.Errorf("%s: the payload sent is not the authorization verified: %+v, %v", name, back.Payload, err)
		}
	}
}

// TestGateRefusesTheDecoyBeforeAnything: through the gate, the decoy
// payment is a 400 before the settler is asked or the ledger touched, and
// the owner of the real payment then pays with it.
func TestGateRefusesTheDecoyBeforeAnything(t *testing.T) {
	ctx := context.Background()
	s := &fakeSettler{settleTx: "0x1"}
	g, l := newTestGate(t, s)
	b := x402test.Payload(t, x402test.Key(t), g.Requirements(), nil)
	decoy := x402test.Payload(t, x402test.Key(t), g.Requirements(), nil)
	attack := withMember(x402test.Wire(t, b), "Payload", x402test.Wire(t, decoy.Payload))
	if _, err := begin(g, ctx, paidRequest(rawHeader(x402.HeaderPaymentSignature, attack))); sandboxd.ErrorCode(err) != sandboxd.CodeInvalid {
		t.Fatalf("Begin(decoy) = %v, want CodeInvalid", err)
	}
	if len(s.calls) != 0 {
		t.Fatalf("the settler was asked %v about the decoy", s.calls)
	}
	for _, p := range []x402.PaymentPayload{b, decoy} {
		a := p.Payload.Authorization
		if _, err := l.Get(ctx, strings.ToLower(a.From), strings.ToLower(a.Nonce)); err == nil {
			t.Fatalf("the ledger holds a row for %s after the decoy", a.From)
		}
	}
	c, err := begin(g, ctx, paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, b)))
	if err != nil {
		t.Fatalf("the owner's own payment after the decoy: %v", err)
	}
	if _, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}}); err != nil {
		t.Fatal(err)
	}
}
