package x402

import (
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// validBeforeMargin is how long an authorization must stay valid after it
// is checked: time for the settlement to reach the chain.
const validBeforeMargin = 6

// maxUint256 bounds every uint256 field of an authorization.
var maxUint256 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))

// Verify checks a decoded payment against req at time now, locally (no
// chain access): VerifySigned, then CheckTime. On success it sets
// p.Transfer and p.Requirements. A failure is a *RejectError naming the
// check and its x402 code.
func Verify(req Requirements, p *Payment, now time.Time) error {
	if err := VerifySigned(req, p); err != nil {
		return err
	}
	if err := CheckTime(p.Transfer, now); err != nil {
		p.Transfer, p.Requirements = nil, Requirements{}
		return err
	}
	return nil
}

// VerifySigned checks a decoded payment against req, locally, for every
// check but time, in the order the x402 reference verifiers use: version,
// scheme and network, the echoed terms entry (equal to req, field by field;
// see checkAccepted), the payload's form, recipient, exact value, the
// EIP-712 domain, then the signature. It proves the payer signed these
// terms whether or not the authorization is still valid, which is what a
// retry of an answered payment needs (its time is checked after, by
// CheckTime). On success it sets p.Transfer and p.Requirements. A failure
// is a *RejectError naming the check and its x402 code.
func VerifySigned(req Requirements, p *Payment) error {
	if p.Version != 1 && p.Version != 2 {
		return Reject(reasonInvalidVersion, "x402Version %d is not supported (send 2, or 1)", p.Version)
	}
	if p.Scheme != req.Scheme {
		return Reject(reasonUnsupportedScheme, "scheme %q is not offered (want %q)", p.Scheme, req.Scheme)
	}
	if CanonicalNetwork(p.Network) != req.Network {
		return Reject(reasonInvalidNetwork, "network %q is not the one offered (want %s or %s)", p.Network, req.Network, V1Network(req.Network))
	}
	if err := checkAccepted(req, p.Accepted); err != nil {
		return err
	}
	t, err := parseAuthorization(p.Exact.Authorization)
	if err != nil {
		return err
	}
	if !strings.EqualFold(t.To.Hex(), req.PayTo) {
		return Reject(reasonRecipientMismatch, "authorization pays %s, not the payee %s", t.To.Hex(), req.PayTo)
	}
	if err := checkValue(t.Value, req.Amount); err != nil {
		return err
	}
	if req.Extra.Name == "" || req.Extra.Version == "" {
		return Reject(reasonMissingDomain, "the asset's EIP-712 domain name and version are not configured")
	}
	if err := checkSignature(req, t, p.Exact.Signature); err != nil {
		return err
	}
	p.Transfer, p.Requirements = t, req
	return nil
}

// CheckTime requires t to be valid at now: validAfter not after now, and
// validBefore at least 6 s after it (time for the settlement to reach the
// chain). A failure is a ReasonValidAfter or ReasonValidBefore refusal.
func CheckTime(t *Transfer, now time.Time) error {
	unix := big.NewInt(now.Unix())
	if t.ValidAfter.Cmp(unix) > 0 {
		return Reject(ReasonValidAfter, "authorization is not valid yet (validAfter %s is after now, %s)", t.ValidAfter, unix)
	}
	if t.ValidBefore.Cmp(new(big.Int).Add(unix, big.NewInt(validBeforeMargin))) < 0 {
		return Reject(ReasonValidBefore, "authorization expires too soon (validBefore %s; it must be at least %d s after now, %s)", t.ValidBefore, validBeforeMargin, unix)
	}
	return nil
}

// CheckWindow requires t to stay valid for window after now: time for the
// service to wait for a sandbox, run and settle (the gate passes
// payments.Config.Window). It is a ReasonValidBefore refusal naming what is
// needed and how to get it.
func CheckWindow(t *Transfer, now time.Time, window time.Duration) error {
	need := now.Add(window).Unix()
	if t.ValidBefore.Cmp(big.NewInt(need)) >= 0 {
		return nil
	}
	left := new(big.Int).Sub(t.ValidBefore, big.NewInt(now.Unix()))
	return Reject(ReasonValidBefore, "authorization expires too soon for this service: validBefore %s is %s s after now, "+
		"but a run here may take %d s from this check to its settlement; sign it valid for the terms' maxTimeoutSeconds",
		t.ValidBefore, left, int64(window/time.Second))
}

// checkValue requires the exact price: more would overcharge the payer.
func checkValue(value *big.Int, amount string) error {
	price, ok := new(big.Int).SetString(amount, 10)
	if !ok {
		return Reject(reasonUnexpectedVerify, "the configured price %q is not a number", amount)
	}
	switch value.Cmp(price) {
	case -1:
		return Reject(ReasonValueMismatch, "authorization value %s is below the price %s", value, price)
	case 1:
		return Reject(ReasonValueMismatch, "authorization value %s is above the price %s; authorize exactly the price", value, price)
	}
	return nil
}

// checkSignature requires a well-formed signature that recovers to t.From,
// and stores it (v normalized to 27/28) in t.
func checkSignature(req Requirements, t *Transfer, sigHex string) error {
	sig, err := hexutil.Decode(sigHex)
	if err != nil {
		return &RejectError{Reason: ReasonSignature, Check: "signature is not 0x-prefixed hex", Err: err}
	}
	digest, err := transferDigest(req, t)
	if err != nil {
		return &RejectError{Reason: ReasonSignature, Check: "authorization cannot be hashed", Err: err}
	}
	signer, norm, err := RecoverSigner(digest, sig)
	if err != nil {
		return &RejectError{Reason: ReasonSignature, Check: "signature is malformed", Err: err}
	}
	if signer != t.From {
		return Reject(ReasonSignature, "signature does not recover to from (%s): it was signed by another key or over other terms (check the asset's EIP-712 name %q and version %q)", t.From.Hex(), req.Extra.Name, req.Extra.Version)
	}
	t.Signature = norm
	return nil
}

// parseAuthorization parses the wire authorization; a malformed field is
// an invalid_payload rejection naming the field.
func parseAuthorization(a Authorization) (*Transfer, error) {
	t := &Transfer{}
	var err error
	if t.From, err = parseAddress("from", a.From); err != nil {
		return nil, err
	}
	if t.To, err = parseAddress("to", a.To); err != nil {
		return nil, err
	}
	if t.Value, err = parseUint256("value", a.Value); err != nil {
		return nil, err
	}
	if t.ValidAfter, err = parseUint256("validAfter", a.ValidAfter); err != nil {
		return nil, err
	}
	if t.ValidBefore, err = parseUint256("validBefore", a.ValidBefore); err != nil {
		return nil, err
	}
	nonce, err := hexutil.Decode(a.Nonce)
	if err != nil || len(nonce) != 32 {
		return nil, Reject(reasonInvalidPayload, "authorization nonce %q is not 32 bytes of 0x-prefixed hex", a.Nonce)
	}
	copy(t.Nonce[:], nonce)
	return t, nil
}

func parseAddress(field, s string) (common.Address, error) {
	if !isAddress(s) {
		return common.Address{}, Reject(reasonInvalidPayload, "authorization %s %q is not a 0x-prefixed address", field, s)
	}
	return common.HexToAddress(s), nil
}

func parseUint256(field, s string) (*big.Int, error) {
	n, ok := parseDecimal(s)
	if !ok {
		return nil, Reject(reasonInvalidPayload, "authorization %s %q is not a decimal uint256 (digits only)", field, s)
	}
	return n, nil
}

// isAddress reports whether s is a 0x-prefixed 20-byte hex address.
func isAddress(s string) bool {
	return (strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X")) && common.IsHexAddress(s)
}
