package channel

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/x402"
)

// Extra is the batch-settlement entry's extra: the token's EIP-712 domain
// (as for exact) and the channel terms a payer builds its config from.
type Extra struct {
	// Name and Version are the token's EIP-712 domain, which a deposit's
	// authorization is signed under.
	Name, Version string
	// ReceiverAuthorizer signs claims and refunds; never zero.
	ReceiverAuthorizer common.Address
	// WithdrawDelay is the channel's withdraw delay in seconds, sent as a
	// JSON number: the official client uses 900 for anything else, and
	// every channel id then mismatches.
	WithdrawDelay uint64
	// MinDeposit is the least deposit the seller suggests, a decimal
	// string in atomic units (a hint: a smaller deposit that covers the
	// voucher is still taken).
	MinDeposit *big.Int
}

// The extra members of a batch-settlement entry besides name and version.
const (
	memberReceiverAuthorizer = "receiverAuthorizer"
	memberWithdrawDelay      = "withdrawDelay"
	memberMinDeposit         = "minDeposit"
	memberChannelState       = "channelState"
	memberVoucherState       = "voucherState"
)

// Entry returns the batch-settlement entry of the terms: exact's entry
// (same network, amount, asset, payTo, timeout and token domain) with
// scheme batch-settlement and e's members in extra. e.MinDeposit must be
// set (the seller's configured hint, or 10 x amount as the official server
// defaults).
func Entry(exact x402.Requirements, e Extra) x402.Requirements {
	entry := exact
	entry.Scheme = Scheme
	extra, err := exact.Extra.WithMembers(map[string]json.RawMessage{
		memberReceiverAuthorizer: jsonString(e.ReceiverAuthorizer.Hex()),
		memberWithdrawDelay:      json.RawMessage(strconv.FormatUint(e.WithdrawDelay, 10)),
		memberMinDeposit:         jsonString(e.MinDeposit.String()),
	})
	if err != nil {
		// Every member above is valid JSON by construction.
		panic(err)
	}
	entry.Extra = extra
	return entry
}

// ParseExtra reads the channel terms of a batch-settlement entry: a
// non-zero receiverAuthorizer address, withdrawDelay a JSON integer within
// MinWithdrawDelay..MaxWithdrawDelay, minDeposit a canonical decimal
// string. It is how a seller's own entry is read back and how a payer
// checks terms before building a config.
func ParseExtra(req x402.Requirements) (Extra, error) {
	e := Extra{Name: req.Extra.Name, Version: req.Extra.Version}
	raw, ok := req.Extra.Member(memberReceiverAuthorizer)
	var s string
	if !ok || json.Unmarshal(raw, &s) != nil {
		return Extra{}, fmt.Errorf("extra.%s is missing or not a string", memberReceiverAuthorizer)
	}
	var err error
	if e.ReceiverAuthorizer, err = parseAddress("extra."+memberReceiverAuthorizer, s); err != nil {
		return Extra{}, err
	}
	if e.ReceiverAuthorizer == (common.Address{}) {
		return Extra{}, fmt.Errorf("extra.%s is the zero address", memberReceiverAuthorizer)
	}
	if raw, ok = req.Extra.Member(memberWithdrawDelay); !ok {
		return Extra{}, fmt.Errorf("extra.%s is missing", memberWithdrawDelay)
	}
	if e.WithdrawDelay, err = parseInteger("extra."+memberWithdrawDelay, raw, MaxWithdrawDelay); err != nil {
		return Extra{}, err
	}
	if e.WithdrawDelay < MinWithdrawDelay {
		return Extra{}, fmt.Errorf("extra.%s %d is below %d s", memberWithdrawDelay, e.WithdrawDelay, MinWithdrawDelay)
	}
	if raw, ok = req.Extra.Member(memberMinDeposit); !ok || json.Unmarshal(raw, &s) != nil {
		return Extra{}, fmt.Errorf("extra.%s is missing or not a string", memberMinDeposit)
	}
	if e.MinDeposit, err = parseAmount("extra."+memberMinDeposit, s, maxUint128); err != nil {
		return Extra{}, err
	}
	return e, nil
}

// ChannelState is the corrective 402's view of a channel (extra
// channelState): the escrow's state as the seller mirrors it and what the
// seller has charged. The official client adopts ChargedCumulativeAmount
// after checking VoucherState.
type ChannelState struct {
	// ChannelID is the channel's id, lower-case hex.
	ChannelID string `json:"channelId"`
	// Balance is the escrow's gross balance of the channel.
	Balance string `json:"balance"`
	// TotalClaimed is what the receiver has claimed on chain.
	TotalClaimed string `json:"totalClaimed"`
	// WithdrawRequestedAt is when a pending withdrawal was initiated (Unix
	// seconds, a JSON number), 0 when none.
	WithdrawRequestedAt uint64 `json:"withdrawRequestedAt"`
	// RefundNonce is the escrow's refund nonce of the channel.
	RefundNonce string `json:"refundNonce"`
	// ChargedCumulativeAmount is what the seller has charged in all.
	ChargedCumulativeAmount string `json:"chargedCumulativeAmount"`
}

// VoucherState is the corrective 402's proof of ChargedCumulativeAmount
// (extra voucherState): the payer's own latest voucher the charge rests on.
type VoucherState struct {
	// SignedMaxClaimable is that voucher's running total.
	SignedMaxClaimable string `json:"signedMaxClaimable"`
	// Signature is that voucher's signature, 0x hex.
	Signature string `json:"signature"`
}

// Corrective returns entry with the corrective state in its extra, the
// batch entry of the 402 that answers ReasonCumulativeMismatch or
// ReasonBelowClaimed. vs is nil when nothing was charged yet (the client
// then reads the chain).
func Corrective(entry x402.Requirements, cs ChannelState, vs *VoucherState) (x402.Requirements, error) {
	members := map[string]json.RawMessage{}
	b, err := json.Marshal(cs)
	if err != nil {
		return entry, err
	}
	members[memberChannelState] = b
	if vs != nil {
		if b, err = json.Marshal(vs); err != nil {
			return entry, err
		}
		members[memberVoucherState] = b
	}
	if entry.Extra, err = entry.Extra.WithMembers(members); err != nil {
		return entry, err
	}
	return entry, nil
}

// jsonString is s as a JSON string.
func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
