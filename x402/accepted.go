package x402

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// checkAccepted requires the terms entry a v2 payer echoed in accepted to
// be the entry quoted (req), field by field, each compared as what it
// means rather than as it is spelled: the amount as a number, asset and
// payTo as addresses (any letter case), extra's EIP-712 name and version,
// maxTimeoutSeconds, scheme and network. This is the official x402
// server's rule: a payment is for terms the server offered, never for a
// copy the payer edited (a facilitator, and the bazaar's listing built from
// what reaches it, would otherwise see the payer's terms as the
// operator's). A difference is a ReasonRequirementsMismatch refusal naming
// the field. A v1 payment echoes no entry (a nil accepted).
func checkAccepted(req Requirements, a *Requirements) error {
	if a == nil {
		return nil
	}
	fields := []struct {
		name      string
		same      bool
		got, want any
	}{
		{"scheme", a.Scheme == req.Scheme, a.Scheme, req.Scheme},
		{"network", CanonicalNetwork(a.Network) == req.Network, a.Network, req.Network},
		{"amount", sameNumber(a.Amount, req.Amount), a.Amount, req.Amount},
		{"asset", sameAddress(a.Asset, req.Asset), a.Asset, req.Asset},
		{"payTo", sameAddress(a.PayTo, req.PayTo), a.PayTo, req.PayTo},
		{"maxTimeoutSeconds", a.MaxTimeoutSeconds == req.MaxTimeoutSeconds, a.MaxTimeoutSeconds, req.MaxTimeoutSeconds},
		{"extra.name", a.Extra.Name == req.Extra.Name, a.Extra.Name, req.Extra.Name},
		{"extra.version", a.Extra.Version == req.Extra.Version, a.Extra.Version, req.Extra.Version},
	}
	for _, f := range fields {
		if !f.same {
			return Reject(ReasonRequirementsMismatch, "accepted.%s %s is not the %s this service quoted (%s); "+
				"echo the terms entry of the PAYMENT-REQUIRED header unchanged", f.name, quoted(f.got), f.name, quoted(f.want))
		}
	}
	return nil
}

// quoted renders a field's value for a refusal: strings quoted (so an
// empty or padded one shows), numbers as they are.
func quoted(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// sameNumber reports whether a and b are the same decimal uint256, however
// spelled ("0005000" is 5000).
func sameNumber(a, b string) bool {
	x, okA := parseDecimal(a)
	y, okB := parseDecimal(b)
	return okA && okB && x.Cmp(y) == 0
}

// sameAddress reports whether a and b are the same 0x-prefixed address, in
// any letter case.
func sameAddress(a, b string) bool {
	return isAddress(a) && isAddress(b) && common.HexToAddress(a) == common.HexToAddress(b)
}

// parseDecimal parses a decimal uint256 written with digits only: no sign
// ("-0", "+1"), no prefix, no spaces. Leading zeros are the same number.
func parseDecimal(s string) (*big.Int, bool) {
	if s == "" || !allDigits(s) {
		return nil, false
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok || n.Cmp(maxUint256) > 0 {
		return nil, false
	}
	return n, true
}

// Exact is the authorization and signature of t re-encoded from their
// parsed values: numbers in decimal without leading zeros, addresses in
// their EIP-55 spelling, nonce and signature as lower-case 0x hex. It is
// what a facilitator gets, never the payer's spelling.
func (t *Transfer) Exact() ExactPayload {
	return ExactPayload{
		Signature: hexutil.Encode(t.Signature),
		Authorization: Authorization{
			From:        t.From.Hex(),
			To:          t.To.Hex(),
			Value:       t.Value.String(),
			ValidAfter:  t.ValidAfter.String(),
			ValidBefore: t.ValidBefore.String(),
			Nonce:       strings.ToLower(common.Hash(t.Nonce).Hex()),
		},
	}
}
