package chain

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"

	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// revertData returns the revert data a node sent with a reverted call, or
// nil.
func revertData(err error) []byte {
	var de rpc.DataError
	if !errors.As(err, &de) {
		return nil
	}
	switch d := de.ErrorData().(type) {
	case string:
		if b, err := hexutil.Decode(d); err == nil {
			return b
		}
	case []byte:
		return d
	}
	return nil
}

// revertName says what a revert was, for messages and logs: the escrow's
// (or the collector's) custom error by name, the message of an
// Error(string) (as the token's), a Panic code, or the raw data.
func revertName(err error) string {
	data := revertData(err)
	if len(data) < 4 {
		return "a revert without a reason"
	}
	if name, ok := errorNames[[4]byte(data[:4])]; ok {
		return name
	}
	if msg, uerr := abi.UnpackRevert(data); uerr == nil {
		return msg
	}
	return "an unknown error " + hexutil.Encode(data[:min(len(data), 36)])
}

// depositReasons map the token's revert messages (USDC's, FiatToken v2) as
// a deposit bubbles them up, to the batch-settlement codes.
var depositReasons = []struct{ text, reason, check string }{
	{"authorization is expired", channel.ReasonValidBefore, "the deposit authorization is expired at the chain's time"},
	{"authorization is not yet valid", channel.ReasonValidAfter, "the deposit authorization is not yet valid at the chain's time"},
	{"invalid signature", channel.ReasonReceiveSignature, "the deposit authorization's signature is invalid for this token"},
	{"used or canceled", channel.ReasonDepositSimulationFailed, "this deposit authorization was already used"},
	{"exceeds balance", channel.ReasonInsufficientBalance, "the payer's token balance is below the deposit"},
}

// depositRefusal says why the escrow refused deposit d to cfg's channel
// id: the authorization used, the payer's balance short (both read from
// the token), or the revert's own reason. reason is the code of anything
// else (the simulation's or the transaction's).
func (s *Settler) depositRefusal(ctx context.Context, cfg channel.Config, id common.Hash, d *channel.Deposit, cause error, reason string) error {
	nonce := channel.DepositNonce(id, d.Salt)
	if used, err := s.authorizationState(ctx, cfg.Token, cfg.Payer, nonce, false); err == nil && used {
		return &x402.RejectError{Reason: channel.ReasonDepositSimulationFailed,
			Check: "this deposit authorization was already used", Err: cause}
	}
	if bal, err := s.balanceOf(ctx, cfg.Token, cfg.Payer); err == nil && bal.Cmp(d.Amount) < 0 {
		return &x402.RejectError{Reason: channel.ReasonInsufficientBalance, Err: cause,
			Check: fmt.Sprintf("the payer's balance %s is below the deposit %s", x402.FormatPrice(bal), x402.FormatPrice(d.Amount))}
	}
	name := revertName(cause)
	lower := strings.ToLower(name)
	for _, r := range depositReasons {
		if strings.Contains(lower, r.text) {
			return &x402.RejectError{Reason: r.reason, Check: r.check, Err: cause}
		}
	}
	return &x402.RejectError{Reason: reason, Check: "the escrow refused the deposit: " + name, Err: cause}
}
