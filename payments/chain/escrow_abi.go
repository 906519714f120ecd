package chain

import (
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd/x402/channel"
)

// configComponents is the escrow's ChannelConfig tuple.
const configComponents = `"components":[
 {"name":"payer","type":"address"},{"name":"payerAuthorizer","type":"address"},{"name":"receiver","type":"address"},
 {"name":"receiverAuthorizer","type":"address"},{"name":"token","type":"address"},
 {"name":"withdrawDelay","type":"uint40"},{"name":"salt","type":"bytes32"}]`

// configArg and claimsArg are the escrow's ChannelConfig and VoucherClaim[]
// arguments; a claim row is ((config, maxClaimableAmount), signature,
// totalClaimed).
const (
	configArg = `{"name":"config","type":"tuple",` + configComponents + `}`
	claimsArg = `{"name":"voucherClaims","type":"tuple[]","components":[
 {"name":"voucher","type":"tuple","components":[{"name":"channel","type":"tuple",` + configComponents + `},
  {"name":"maxClaimableAmount","type":"uint128"}]},
 {"name":"signature","type":"bytes"},{"name":"totalClaimed","type":"uint128"}]}`
)

// escrowABIJSON is the part of the x402BatchSettlement escrow this package
// calls and the events it reads.
const escrowABIJSON = `[
{"type":"function","name":"deposit","stateMutability":"nonpayable","outputs":[],"inputs":[` + configArg + `,
 {"name":"amount","type":"uint128"},{"name":"collector","type":"address"},{"name":"collectorData","type":"bytes"}]},
{"type":"function","name":"claim","stateMutability":"nonpayable","outputs":[],"inputs":[` + claimsArg + `]},
{"type":"function","name":"claimWithSignature","stateMutability":"nonpayable","outputs":[],"inputs":[` + claimsArg + `,
 {"name":"authorizerSignature","type":"bytes"}]},
{"type":"function","name":"settle","stateMutability":"nonpayable","outputs":[],"inputs":[
 {"name":"receiver","type":"address"},{"name":"token","type":"address"}]},
{"type":"function","name":"refund","stateMutability":"nonpayable","outputs":[],"inputs":[` + configArg + `,
 {"name":"amount","type":"uint128"}]},
{"type":"function","name":"refundWithSignature","stateMutability":"nonpayable","outputs":[],"inputs":[` + configArg + `,
 {"name":"amount","type":"uint128"},{"name":"nonce","type":"uint256"},{"name":"receiverAuthorizerSignature","type":"bytes"}]},
{"type":"function","name":"multicall","stateMutability":"nonpayable","inputs":[{"name":"data","type":"bytes[]"}],
 "outputs":[{"name":"results","type":"bytes[]"}]},
{"type":"function","name":"channels","stateMutability":"view","inputs":[{"name":"","type":"bytes32"}],
 "outputs":[{"name":"balance","type":"uint128"},{"name":"totalClaimed","type":"uint128"}]},
{"type":"function","name":"pendingWithdrawals","stateMutability":"view","inputs":[{"name":"","type":"bytes32"}],
 "outputs":[{"name":"amount","type":"uint128"},{"name":"initiatedAt","type":"uint40"}]},
{"type":"function","name":"refundNonce","stateMutability":"view","inputs":[{"name":"","type":"bytes32"}],
 "outputs":[{"name":"","type":"uint256"}]},
{"type":"function","name":"receivers","stateMutability":"view","inputs":[{"name":"","type":"address"},{"name":"","type":"address"}],
 "outputs":[{"name":"totalClaimed","type":"uint128"},{"name":"totalSettled","type":"uint128"}]},
{"type":"event","name":"Deposited","anonymous":false,"inputs":[{"name":"channelId","type":"bytes32","indexed":true},
 {"name":"sender","type":"address","indexed":true},{"name":"amount","type":"uint128","indexed":false},
 {"name":"newBalance","type":"uint128","indexed":false}]},
{"type":"event","name":"Claimed","anonymous":false,"inputs":[{"name":"channelId","type":"bytes32","indexed":true},
 {"name":"sender","type":"address","indexed":true},{"name":"claimAmount","type":"uint128","indexed":false},
 {"name":"newTotalClaimed","type":"uint128","indexed":false}]},
{"type":"event","name":"Settled","anonymous":false,"inputs":[{"name":"receiver","type":"address","indexed":true},
 {"name":"token","type":"address","indexed":true},{"name":"sender","type":"address","indexed":true},
 {"name":"amount","type":"uint128","indexed":false}]},
{"type":"event","name":"Refunded","anonymous":false,"inputs":[{"name":"channelId","type":"bytes32","indexed":true},
 {"name":"sender","type":"address","indexed":true},{"name":"amount","type":"uint128","indexed":false}]}
]`

// escrowErrors are the escrow's custom errors (none has arguments) and the
// deposit collector's, which a deposit bubbles up: a revert names them.
var escrowErrors = []string{
	"InvalidChannel", "ZeroDeposit", "DepositOverflow", "InvalidSignature", "NotReceiverAuthorizer",
	"NotAuthorizedToClaim", "NotAuthorizedToRefund", "ClaimExceedsCeiling", "ClaimExceedsBalance",
	"WithdrawalAlreadyPending", "WithdrawalNotPending", "NotAuthorizedToFinalizeWithdraw", "WithdrawDelayNotElapsed",
	"NothingToWithdraw", "WithdrawAmountExceedsAvailable", "WithdrawDelayOutOfRange", "EmptyBatch",
	"DepositCollectionFailed", "InvalidCollector", "InvalidRefundNonce", "ZeroRefund",
	"OnlyX402BatchSettlement",
}

// errorNames maps the 4-byte selector of each of escrowErrors to its name.
var errorNames = func() map[[4]byte]string {
	m := make(map[[4]byte]string, len(escrowErrors))
	for _, name := range escrowErrors {
		m[[4]byte(crypto.Keccak256([]byte(name + "()"))[:4])] = name
	}
	return m
}()

// escrowABI is escrowABIJSON parsed.
var escrowABI = mustABI(escrowABIJSON)

// mustABI parses one of this package's ABI constants.
func mustABI(s string) abi.ABI {
	a, err := abi.JSON(strings.NewReader(s))
	if err != nil {
		panic(err)
	}
	return a
}

// abiConfig, abiVoucher and abiVoucherClaim are the escrow's tuples as the
// abi package packs them (fields named after the components).
type abiConfig struct {
	Payer, PayerAuthorizer, Receiver, ReceiverAuthorizer, Token common.Address
	WithdrawDelay                                               *big.Int
	Salt                                                        [32]byte
}

type abiVoucher struct {
	Channel            abiConfig
	MaxClaimableAmount *big.Int
}

type abiVoucherClaim struct {
	Voucher      abiVoucher
	Signature    []byte
	TotalClaimed *big.Int
}

// maxUint128 bounds the escrow's amounts.
var maxUint128 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))

// errAmount is the cause of an amount the escrow cannot take.
var errAmount = errors.New("an amount is missing, negative or over uint128")

// checkAmounts reports an amount out of the escrow's uint128 range.
func checkAmounts(amounts ...*big.Int) error {
	for _, a := range amounts {
		if a == nil || a.Sign() < 0 || a.Cmp(maxUint128) > 0 {
			return errAmount
		}
	}
	return nil
}

func toABIConfig(c channel.Config) abiConfig {
	return abiConfig{Payer: c.Payer, PayerAuthorizer: c.PayerAuthorizer, Receiver: c.Receiver,
		ReceiverAuthorizer: c.ReceiverAuthorizer, Token: c.Token,
		WithdrawDelay: new(big.Int).SetUint64(c.WithdrawDelay), Salt: c.Salt}
}

// toABIClaims checks rows' amounts and returns them as the escrow's tuples.
func toABIClaims(rows []VoucherClaim) ([]abiVoucherClaim, error) {
	if len(rows) == 0 {
		return nil, errors.New("a claim needs at least one row")
	}
	out := make([]abiVoucherClaim, len(rows))
	for i, r := range rows {
		if err := checkAmounts(r.MaxClaimable, r.TotalClaimed); err != nil {
			return nil, fmt.Errorf("claim row %d: %w", i, err)
		}
		out[i] = abiVoucherClaim{Voucher: abiVoucher{Channel: toABIConfig(r.Config), MaxClaimableAmount: r.MaxClaimable},
			Signature: r.Signature, TotalClaimed: r.TotalClaimed}
	}
	return out, nil
}

// packDeposit encodes deposit(cfg, d.Amount, channel.Collector,
// channel.CollectorData(d)).
func packDeposit(cfg channel.Config, d *channel.Deposit) ([]byte, error) {
	if err := checkAmounts(d.Amount); err != nil {
		return nil, err
	}
	if d.ValidAfter == nil || d.ValidBefore == nil || d.ValidAfter.Sign() < 0 || d.ValidBefore.Sign() < 0 {
		return nil, errors.New("the deposit's validity window is missing or negative")
	}
	data, err := channel.CollectorData(d)
	if err != nil {
		return nil, err
	}
	return escrowABI.Pack("deposit", toABIConfig(cfg), d.Amount, channel.Collector, data)
}
