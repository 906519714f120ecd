package x402

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// The paying client's defaults: the documented price, network and asset of
// the service (USDC on Base Sepolia), and a validity window long enough for
// a run and its settlement.
const (
	// DefaultClientMaxAmount is the most the client pays per call by
	// default, in asset units: the documented price.
	DefaultClientMaxAmount = "0.005"
	// DefaultClientNetwork is the only network paid on by default.
	DefaultClientNetwork = "eip155:84532"
	// DefaultClientAsset is the only asset paid with by default (USDC on
	// Base Sepolia).
	DefaultClientAsset = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	// DefaultClientMaxWindow caps how long a signed authorization stays
	// valid by default.
	DefaultClientMaxWindow = 5 * time.Minute
)

// PayPolicy bounds what Pay signs, and says how a paid request whose answer
// is lost is sent again (Resend). A server's terms are quoted by the
// server: a hostile one may ask any amount, asset, network, payee or window.
// Terms outside the policy are refused before anything is signed; a window
// longer than MaxWindow is shortened to it.
type PayPolicy struct {
	// MaxAmount is the most paid per call, in atomic units.
	MaxAmount *big.Int
	// Networks are the CAIP-2 networks paid on.
	Networks []string
	// Assets are the token addresses paid with.
	Assets []string
	// PayTo, when set, is the only payee paid.
	PayTo string
	// MaxWindow caps the validity window of a signed authorization.
	MaxWindow time.Duration
	// Resend is the payment id sent and how a lost answer is asked for
	// again; its zero value sends no id and never sends again.
	Resend Resend
}

// DefaultPayPolicy is the client's policy without flags.
func DefaultPayPolicy() PayPolicy {
	max, _ := ParsePrice(DefaultClientMaxAmount)
	return PayPolicy{MaxAmount: max, Networks: []string{DefaultClientNetwork},
		Assets: []string{DefaultClientAsset}, MaxWindow: DefaultClientMaxWindow}
}

// QuoteRefusedError is returned by Pay when no terms entry of the 402 is
// within the policy; nothing was signed.
type QuoteRefusedError struct {
	// Reasons says, for each entry offered, why it was refused.
	Reasons []string
}

// Error implements the error interface.
func (e *QuoteRefusedError) Error() string {
	return "refusing to pay, nothing was signed: " + strings.Join(e.Reasons, "; ")
}

// Check returns why req is outside the policy, or nil. It does not look
// at the scheme: each scheme's payer picks its own entries.
func (p PayPolicy) Check(req Requirements) error {
	amount, ok := new(big.Int).SetString(req.Amount, 10)
	switch {
	case !ok || amount.Sign() <= 0 || amount.Cmp(maxUint256) > 0:
		return fmt.Errorf("the amount %q is not a positive number of atomic units", req.Amount)
	case p.MaxAmount == nil || amount.Cmp(p.MaxAmount) > 0:
		return fmt.Errorf("the server asks %s (%s atomic units), over the maximum %s: raise --max-amount to pay it",
			FormatPrice(amount), amount, formatMax(p.MaxAmount))
	case !containsFold(p.Networks, CanonicalNetwork(req.Network)):
		return fmt.Errorf("the network %q is not one paid on (%s): name it with --network to pay on it",
			req.Network, strings.Join(p.Networks, ", "))
	case !containsFold(p.Assets, req.Asset):
		return fmt.Errorf("the asset %q is not one paid with (%s): name it with --asset to pay with it",
			req.Asset, strings.Join(p.Assets, ", "))
	case p.PayTo != "" && !strings.EqualFold(p.PayTo, req.PayTo):
		return fmt.Errorf("the payee %q is not the one named with --pay-to (%s)", req.PayTo, p.PayTo)
	case p.MaxWindow < time.Second:
		return errors.New("the maximum validity window is under a second")
	}
	return nil
}

// CapWindow returns req with its validity window (60 s when none is
// quoted) shortened to the policy's.
func (p PayPolicy) CapWindow(req Requirements) Requirements {
	if req.MaxTimeoutSeconds <= 0 {
		req.MaxTimeoutSeconds = 60
	}
	if max := int(p.MaxWindow / time.Second); req.MaxTimeoutSeconds > max {
		req.MaxTimeoutSeconds = max
	}
	return req
}

func formatMax(max *big.Int) string {
	if max == nil {
		return "(none set)"
	}
	return FormatPrice(max)
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}
