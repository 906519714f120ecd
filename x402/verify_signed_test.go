package x402_test

import (
	"strconv"
	"testing"

	. "sandboxd/x402"
	"sandboxd/x402/x402test"
)

// TestVerifySignedIgnoresTime: an authorization out of its time, correctly
// signed, passes VerifySigned (a retry of an answered payment still proves
// its payer) and fails CheckTime; a bad signature out of its time is the
// signature's refusal, the time checked after it.
func TestVerifySignedIgnoresTime(t *testing.T) {
	key := x402test.Key(t)
	at := func(s int64) string { return strconv.FormatInt(x402test.Now.Unix()+s, 10) }
	for _, c := range []struct {
		name string
		auth func(*Authorization)
		want string
	}{
		{"expired", func(a *Authorization) { a.ValidBefore = at(-3600) }, ReasonValidBefore},
		{"not yet valid", func(a *Authorization) { a.ValidAfter = at(60) }, ReasonValidAfter},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := x402test.Requirements(t)
			pp := x402test.Payload(t, key, req, c.auth)
			pp.Accepted = req
			p := x402test.Decode(t, x402test.Header(t, HeaderPaymentSignature, pp))
			if err := VerifySigned(req, p); err != nil || p.Transfer == nil {
				t.Fatalf("VerifySigned = %v, transfer %v", err, p.Transfer)
			}
			if got := RejectReason(CheckTime(p.Transfer, x402test.Now), ""); got != c.want {
				t.Errorf("CheckTime reason %q, want %q", got, c.want)
			}
			p = x402test.Decode(t, x402test.Header(t, HeaderPaymentSignature, pp))
			if got := RejectReason(Verify(req, p, x402test.Now), ""); got != c.want || p.Transfer != nil {
				t.Errorf("Verify reason %q (transfer %v), want %q and none", got, p.Transfer, c.want)
			}
			sig := []byte(pp.Payload.Signature)
			if sig[20] = '0'; pp.Payload.Signature[20] == '0' {
				sig[20] = '1' // another r
			}
			pp.Payload.Signature = string(sig)
			p = x402test.Decode(t, x402test.Header(t, HeaderPaymentSignature, pp))
			if got := RejectReason(Verify(req, p, x402test.Now), ""); got != ReasonSignature {
				t.Errorf("a bad signature out of time: reason %q, want %q", got, ReasonSignature)
			}
		})
	}
}
