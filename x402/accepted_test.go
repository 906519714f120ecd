package x402_test

import (
	"errors"
	"strings"
	"testing"

	. "sandboxd/x402"
	"sandboxd/x402/x402test"
)

// TestVerifyRefusesEditedTerms: a valid authorization
// whose echoed terms entry is not the one quoted, in any field, is refused
// with invalid_payment_requirements naming the field; the same entry in
// another spelling (an amount with leading zeros, addresses in other
// letter cases or with a 0X prefix) is the same entry. Before, only the
// asset was compared and the rest was forwarded to the facilitator.
func TestVerifyRefusesEditedTerms(t *testing.T) {
	key := x402test.Key(t)
	tests := []struct {
		field string // "" means accepted
		edit  func(*Requirements)
	}{
		{"payTo", func(r *Requirements) { r.PayTo = "0x2222222222222222222222222222222222222222" }},
		{"amount", func(r *Requirements) { r.Amount = "1" }},
		{"amount", func(r *Requirements) { r.Amount = "-5000" }},
		{"amount", func(r *Requirements) { r.Amount = "5000.0" }},
		{"amount", func(r *Requirements) { r.Amount = "" }},
		{"extra.name", func(r *Requirements) { r.Extra.Name = "Evil" }},
		{"extra.version", func(r *Requirements) { r.Extra.Version = "3" }},
		{"maxTimeoutSeconds", func(r *Requirements) { r.MaxTimeoutSeconds = 999999 }},
		{"asset", func(r *Requirements) { r.Asset = x402test.PayTo }},
		{"asset", func(r *Requirements) { r.Asset = "USDC" }},
		{"", func(r *Requirements) { r.Amount = "0005000" }},
		{"", func(r *Requirements) { r.Asset = "0X" + strings.ToUpper(r.Asset[2:]) }},
		{"", func(r *Requirements) { r.PayTo = strings.ToLower(r.PayTo) }},
	}
	for _, tt := range tests {
		req := x402test.Requirements(t)
		pp := x402test.Payload(t, key, req, nil)
		tt.edit(&pp.Accepted)
		p := x402test.Decode(t, x402test.Header(t, HeaderPaymentSignature, pp))
		err := Verify(req, p, x402test.Now)
		if tt.field == "" {
			if err != nil {
				t.Errorf("%+v: %v; the same entry spelled otherwise must pass", pp.Accepted, err)
			}
			continue
		}
		var r *RejectError
		if !errors.As(err, &r) || r.Reason != ReasonRequirementsMismatch || !strings.Contains(r.Check, "accepted."+tt.field+" ") {
			t.Errorf("accepted %+v: Verify = %v, want %s naming accepted.%s", pp.Accepted, err, ReasonRequirementsMismatch, tt.field)
		}
	}
}

// TestVerifyReadsNumbersStrictly: an authorization number with a
// sign ("-0", "+1") is malformed, while leading zeros are the same number,
// which the facilitator gets re-encoded (Transfer.Exact).
func TestVerifyReadsNumbersStrictly(t *testing.T) {
	key := x402test.Key(t)
	req := x402test.Requirements(t)
	for _, bad := range []string{"-0", "+0", " 0", "0x0"} {
		pp := x402test.Payload(t, key, req, nil)
		pp.Payload.Authorization.ValidAfter = bad
		p := x402test.Decode(t, x402test.Header(t, HeaderPaymentSignature, pp))
		if err := Verify(req, p, x402test.Now); RejectReason(err, "") != ReasonInvalidPayload {
			t.Errorf("validAfter %q: Verify = %v, want %s", bad, err, ReasonInvalidPayload)
		}
	}
	pp := x402test.Payload(t, key, req, func(a *Authorization) {
		a.Value, a.ValidAfter = "0005000", "000"
		a.From = "0X" + strings.ToUpper(a.From[2:])
		a.Nonce = "0X" + strings.ToUpper(a.Nonce[2:])
	})
	p := x402test.Decode(t, x402test.Header(t, HeaderPaymentSignature, pp))
	if err := Verify(req, p, x402test.Now); err != nil {
		t.Fatal(err)
	}
	got := p.Transfer.Exact().Authorization
	if got.Value != "5000" || got.ValidAfter != "0" || got.From != p.Transfer.From.Hex() || got.Nonce != strings.ToLower(got.Nonce) ||
		!strings.HasPrefix(got.Nonce, "0x") {
		t.Fatalf("re-encoded authorization %+v keeps the payer's spelling", got)
	}
}
