package channel

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"sandboxd/internal/jsonkeys"
	"sandboxd/x402"
)

// The payload shapes, closed at every level: a payer's payload holds
// exactly what the official client sends. A Permit2 deposit
// (authorization.permit2Authorization) is not taken: the terms never offer
// it.
var (
	configShape = jsonkeys.Closed(map[string]*jsonkeys.Shape{
		"payer": nil, "payerAuthorizer": nil, "receiver": nil, "receiverAuthorizer": nil,
		"token": nil, "withdrawDelay": nil, "salt": nil})
	voucherShape  = jsonkeys.Closed(map[string]*jsonkeys.Shape{"channelId": nil, "maxClaimableAmount": nil, "signature": nil})
	erc3009Shape  = jsonkeys.Closed(map[string]*jsonkeys.Shape{"validAfter": nil, "validBefore": nil, "salt": nil, "signature": nil})
	depositShape  = jsonkeys.Closed(map[string]*jsonkeys.Shape{"amount": nil, "authorization": jsonkeys.Closed(map[string]*jsonkeys.Shape{"erc3009Authorization": erc3009Shape})})
	payloadShapes = map[Kind]*jsonkeys.Shape{
		KindDeposit: jsonkeys.Closed(map[string]*jsonkeys.Shape{"type": nil, "channelConfig": configShape, "voucher": voucherShape, "deposit": depositShape}),
		KindVoucher: jsonkeys.Closed(map[string]*jsonkeys.Shape{"type": nil, "channelConfig": configShape, "voucher": voucherShape}),
		KindRefund:  jsonkeys.Closed(map[string]*jsonkeys.Shape{"type": nil, "channelConfig": configShape, "voucher": voucherShape, "amount": nil}),
	}
)

// maxUint128 bounds every amount: the escrow keeps them in uint128.
var maxUint128 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))

// maxUint256 bounds an authorization's times.
var maxUint256 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))

// maxUint40 bounds the withdraw delay, a uint40 in the escrow.
const maxUint40 = 1<<40 - 1

// wirePayload is every member a payer's payload may hold, as sent; the
// shape of its type says which it must.
type wirePayload struct {
	Type          string           `json:"type"`
	ChannelConfig *json.RawMessage `json:"channelConfig"`
	Voucher       *struct {
		ChannelID          string `json:"channelId"`
		MaxClaimableAmount string `json:"maxClaimableAmount"`
		Signature          string `json:"signature"`
	} `json:"voucher"`
	Deposit *struct {
		Amount        string `json:"amount"`
		Authorization struct {
			ERC3009 *struct {
				ValidAfter  string `json:"validAfter"`
				ValidBefore string `json:"validBefore"`
				Salt        string `json:"salt"`
				Signature   string `json:"signature"`
			} `json:"erc3009Authorization"`
		} `json:"authorization"`
	} `json:"deposit"`
	// Amount is a refund's amount; nil when absent (null is not absent).
	Amount json.RawMessage `json:"amount"`
}

// Decode reads a batch-settlement payload (the payload member of a v2
// PaymentPayload) one way only: a key named twice in any letter case, a key
// the payload's type does not have, a member missing, an amount that is not
// a canonical decimal uint128 ("01", "1e3", "-1", over 2^128-1), an address
// or hex value not strictly formed (a mixed-case address must carry its
// EIP-55 checksum), or a withdrawDelay that is not a JSON integer, is an
// error (the header does not decode). A type a payer may not send ("claim",
// "settle", anything else) is a *x402.RejectError ReasonPayloadType, and a
// refund of amount "0" ReasonRefundAmount.
func Decode(raw []byte) (Payload, error) {
	var probe struct {
		Type *string `json:"type"`
	}
	if err := x402.DecodeStrict(raw, nil, &probe); err != nil {
		return Payload{}, err
	}
	if probe.Type == nil {
		return Payload{}, errors.New("the payload has no type")
	}
	kind := Kind(*probe.Type)
	shape, ok := payloadShapes[kind]
	if !ok {
		return Payload{}, x402.Reject(ReasonPayloadType, "payload type %q is not one a payer sends (deposit, voucher or refund)", *probe.Type)
	}
	var w wirePayload
	if err := x402.DecodeStrict(raw, shape, &w); err != nil {
		return Payload{}, err
	}
	p := Payload{Kind: kind}
	if w.ChannelConfig == nil || w.Voucher == nil {
		return Payload{}, fmt.Errorf("a %s payload needs channelConfig and voucher", kind)
	}
	var err error
	if p.Config, err = decodeConfig(*w.ChannelConfig); err != nil {
		return Payload{}, err
	}
	v := w.Voucher
	if p.Voucher.ChannelID, err = parseBytes32("voucher.channelId", v.ChannelID); err != nil {
		return Payload{}, err
	}
	if p.Voucher.MaxClaimableAmount, err = parseAmount("voucher.maxClaimableAmount", v.MaxClaimableAmount, maxUint128); err != nil {
		return Payload{}, err
	}
	if p.Voucher.Signature, err = parseHex("voucher.signature", v.Signature); err != nil {
		return Payload{}, err
	}
	switch kind {
	case KindDeposit:
		p.Deposit, err = decodeDeposit(&w)
	case KindRefund:
		p.RefundAmount, err = decodeRefundAmount(w.Amount)
	}
	if err != nil {
		return Payload{}, err
	}
	return p, nil
}

// decodeConfig reads a channelConfig, every member required.
func decodeConfig(raw json.RawMessage) (Config, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return Config{}, fmt.Errorf("channelConfig is not an object: %w", err)
	}
	var c Config
	addrs := []struct {
		name string
		dst  *common.Address
	}{
		{"payer", &c.Payer}, {"payerAuthorizer", &c.PayerAuthorizer}, {"receiver", &c.Receiver},
		{"receiverAuthorizer", &c.ReceiverAuthorizer}, {"token", &c.Token},
	}
	for _, a := range addrs {
		s, err := stringMember(m, a.name)
		if err != nil {
			return Config{}, err
		}
		if *a.dst, err = parseAddress("channelConfig."+a.name, s); err != nil {
			return Config{}, err
		}
	}
	delay, ok := m["withdrawDelay"]
	if !ok {
		return Config{}, errors.New("channelConfig.withdrawDelay is missing")
	}
	d, err := parseInteger("channelConfig.withdrawDelay", delay, maxUint40)
	if err != nil {
		return Config{}, err
	}
	c.WithdrawDelay = d
	salt, err := stringMember(m, "salt")
	if err != nil {
		return Config{}, err
	}
	if c.Salt, err = parseBytes32("channelConfig.salt", salt); err != nil {
		return Config{}, err
	}
	return c, nil
}

// decodeDeposit reads a deposit's amount and ERC-3009 authorization.
func decodeDeposit(w *wirePayload) (*Deposit, error) {
	if w.Deposit == nil || w.Deposit.Authorization.ERC3009 == nil {
		return nil, errors.New("a deposit payload needs deposit.amount and deposit.authorization.erc3009Authorization")
	}
	a := w.Deposit.Authorization.ERC3009
	d := &Deposit{}
	var err error
	if d.Amount, err = parseAmount("deposit.amount", w.Deposit.Amount, maxUint128); err != nil {
		return nil, err
	}
	if d.Amount.Sign() == 0 {
		return nil, errors.New(`deposit.amount is "0"; a deposit adds something to the channel`)
	}
	if d.ValidAfter, err = parseAmount("erc3009Authorization.validAfter", a.ValidAfter, maxUint256); err != nil {
		return nil, err
	}
	if d.ValidBefore, err = parseAmount("erc3009Authorization.validBefore", a.ValidBefore, maxUint256); err != nil {
		return nil, err
	}
	if d.Salt, err = parseBytes32("erc3009Authorization.salt", a.Salt); err != nil {
		return nil, err
	}
	if d.Signature, err = parseHex("erc3009Authorization.signature", a.Signature); err != nil {
		return nil, err
	}
	return d, nil
}

// decodeRefundAmount reads a refund's optional amount, a decimal string;
// absent (nil) asks for all.
func decodeRefundAmount(raw json.RawMessage) (*big.Int, error) {
	if raw == nil {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || string(raw) == "null" {
		return nil, fmt.Errorf("refund amount %s is not a decimal string", raw)
	}
	n, err := parseAmount("amount", s, maxUint128)
	if err != nil {
		return nil, err
	}
	if n.Sign() == 0 {
		return nil, x402.Reject(ReasonRefundAmount, `refund amount "0" asks for nothing; leave amount out to ask for all that is left`)
	}
	return n, nil
}

// stringMember returns the string member name of m.
func stringMember(m map[string]json.RawMessage, name string) (string, error) {
	raw, ok := m[name]
	if !ok {
		return "", fmt.Errorf("channelConfig.%s is missing", name)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("channelConfig.%s must be a string", name)
	}
	return s, nil
}

// parseAmount parses a canonical decimal: digits only, no leading zero but
// in "0", at most limit (2^n - 1).
func parseAmount(field, s string, limit *big.Int) (*big.Int, error) {
	n, ok := new(big.Int).SetString(s, 10)
	if !canonicalDigits(s) || !ok || n.Cmp(limit) > 0 {
		return nil, fmt.Errorf("%s %q is not a uint%d as a canonical decimal string (digits, no sign, no leading zeros)", field, s, limit.BitLen())
	}
	return n, nil
}

// parseInteger parses a JSON number that is a canonical non-negative
// integer up to limit: 900, not "900", 900.0 or 9e2.
func parseInteger(field string, raw json.RawMessage, limit uint64) (uint64, error) {
	s := strings.TrimSpace(string(raw))
	n, ok := new(big.Int).SetString(s, 10)
	if !canonicalDigits(s) || !ok || !n.IsUint64() || n.Uint64() > limit {
		return 0, fmt.Errorf("%s %s is not a JSON integer from 0 to %d (a number, not a string)", field, s, limit)
	}
	return n.Uint64(), nil
}

// canonicalDigits reports whether s is "0" or digits without a leading zero.
func canonicalDigits(s string) bool {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseAddress parses a 0x-prefixed 20-byte address; one in mixed case
// must carry its EIP-55 checksum, as viem requires of the official client.
func parseAddress(field, s string) (common.Address, error) {
	if !strings.HasPrefix(s, "0x") || !common.IsHexAddress(s) {
		return common.Address{}, fmt.Errorf("%s %q is not a 0x-prefixed address", field, s)
	}
	a := common.HexToAddress(s)
	body := s[2:]
	if body != strings.ToLower(body) && body != strings.ToUpper(body) && a.Hex() != s {
		return common.Address{}, fmt.Errorf("%s %q has a wrong EIP-55 checksum (want %s)", field, s, a.Hex())
	}
	return a, nil
}

// parseBytes32 parses 32 bytes of 0x-prefixed hex.
func parseBytes32(field, s string) (common.Hash, error) {
	b, err := parseHex(field, s)
	if err != nil || len(b) != 32 {
		return common.Hash{}, fmt.Errorf("%s %q is not 32 bytes of 0x-prefixed hex", field, s)
	}
	return common.BytesToHash(b), nil
}

// parseHex parses 0x-prefixed hex of whole bytes (a signature's length is
// checked where it is verified, with the other signature faults).
func parseHex(field, s string) ([]byte, error) {
	if !strings.HasPrefix(s, "0x") {
		return nil, fmt.Errorf("%s %q is not 0x-prefixed hex", field, s)
	}
	b, err := hexutil.Decode(s)
	if err != nil {
		return nil, fmt.Errorf("%s %q is not 0x-prefixed hex of whole bytes", field, s)
	}
	return b, nil
}
