package payer

import (
	"errors"
	"fmt"
	"math/big"
	"strings"

	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// Scheme says which x402 schemes Pay pays with.
type Scheme string

// The schemes Pay can be limited to.
const (
	// SchemeAuto pays through a channel when the seller offers one within
	// the policy, else exact.
	SchemeAuto Scheme = "auto"
	// SchemeExact pays each call with its own EIP-3009 transfer.
	SchemeExact Scheme = x402.SchemeExact
	// SchemeChannel pays through channels only.
	SchemeChannel Scheme = channel.Scheme
)

// ParseScheme reads a scheme's name: auto, exact or batch-settlement.
func ParseScheme(s string) (Scheme, error) {
	switch Scheme(s) {
	case SchemeAuto, SchemeExact, SchemeChannel:
		return Scheme(s), nil
	}
	return "", fmt.Errorf("scheme %q is not auto, exact or batch-settlement", s)
}

// DepositMultiple is how many prices a payer deposits at most by default
// (MaxDeposit), as many as the official seller's minimum deposit hint.
const DepositMultiple = 10

// DefaultMaxDeposit is the most deposited into a channel at once by
// default: DepositMultiple times the most paid per call.
func DefaultMaxDeposit(maxAmount *big.Int) *big.Int {
	return new(big.Int).Mul(maxAmount, big.NewInt(DepositMultiple))
}

// Policy bounds what Pay signs: the exact policy, which every entry paid
// must pass (a channel's price per call included), the schemes paid with,
// and the most deposited into a channel at once.
type Policy struct {
	x402.PayPolicy
	// Scheme says which schemes are paid with.
	Scheme Scheme
	// MaxDeposit is the most one deposit puts into a channel, in atomic
	// units; a call whose voucher needs more is refused unsigned.
	MaxDeposit *big.Int
}

// errNoChannel is pickEntry's answer to terms without a batch-settlement
// entry.
var errNoChannel = errors.New("the server offers no batch-settlement channel")

// pickEntry returns the first batch-settlement entry of q within policy
// whose channel terms parse; errNoChannel when q has none (v1 terms never
// have), else a *x402.QuoteRefusedError saying why each was refused.
func pickEntry(q x402.Quote, policy Policy) (x402.Requirements, error) {
	refused := &x402.QuoteRefusedError{}
	for _, a := range q.Accepts {
		if q.Version != 2 || a.Scheme != channel.Scheme {
			continue
		}
		if !strings.HasPrefix(x402.CanonicalNetwork(a.Network), "eip155:") {
			refused.Reasons = append(refused.Reasons, fmt.Sprintf("the channel on %q is not on an EVM chain", a.Network))
		} else if err := policy.Check(a); err != nil {
			refused.Reasons = append(refused.Reasons, "the channel's terms: "+err.Error())
		} else if _, err := channel.ParseExtra(a); err != nil {
			refused.Reasons = append(refused.Reasons, "the channel's terms do not parse: "+err.Error())
		} else {
			return a, nil
		}
	}
	if len(refused.Reasons) == 0 {
		return x402.Requirements{}, errNoChannel
	}
	return x402.Requirements{}, refused
}

// offered names the schemes and networks of q's entries, for a refusal.
func offered(q x402.Quote) string {
	var s []string
	for _, a := range q.Accepts {
		s = append(s, a.Scheme+" on "+a.Network)
	}
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

// depositAmount is the deposit that lets a voucher needing need more than
// the balance be paid: need, raised to the seller's hint but no higher than
// the cap; a need over the cap is refused.
func depositAmount(need, hint, cap *big.Int) (*big.Int, error) {
	if need.Cmp(cap) > 0 {
		return nil, fmt.Errorf("refusing to pay, nothing was signed: the channel needs a deposit of %s (%s atomic units) "+
			"to pay this call, over the maximum deposit %s: raise --max-deposit to pay it",
			x402.FormatPrice(need), need, x402.FormatPrice(cap))
	}
	amount := new(big.Int).Set(hint)
	if amount.Cmp(cap) > 0 {
		amount.Set(cap)
	}
	if amount.Cmp(need) < 0 {
		amount.Set(need)
	}
	return amount, nil
}
