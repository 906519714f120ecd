package payer

import (
	"crypto/ecdsa"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// report is a channel payment's PAYMENT-RESPONSE: the settlement report
// with the amount (a deposit's or a refund's) and the channel's extra.
type report struct {
	Success     bool   `json:"success"`
	ErrorReason string `json:"errorReason"`
	Transaction string `json:"transaction"`
	Network     string `json:"network"`
	Amount      string `json:"amount"`
	Extra       struct {
		ChargedAmount string                `json:"chargedAmount"`
		ChannelState  *channel.ChannelState `json:"channelState"`
	} `json:"extra"`
}

// readReport decodes the PAYMENT-RESPONSE of resp; nil when there is none.
func readReport(resp *x402.PaidResponse) (*report, error) {
	v := resp.Header.Get(x402.HeaderPaymentResponse)
	if v == "" {
		return nil, nil
	}
	var r report
	if err := x402.DecodeHeader(v, &r); err != nil {
		return nil, fmt.Errorf("the %s header does not decode: %w", x402.HeaderPaymentResponse, err)
	}
	return &r, nil
}

// settle takes the answer to p, paid for entry on ch: with a successful
// report, the running total grows by what the seller says it charged (at
// most the price: more is refused and nothing is saved), the balance by
// the deposit, and p's voucher is kept. As in the official client, the
// seller's balance is never taken (its word would decide the next
// deposit), and a seller whose running total is not this payer's after
// the call is not followed until it proves its total (the next call's
// correction); the deposit it reported taken still counts. Without a
// successful report nothing was charged as far as the payer knows, and
// nothing changes.
func settle(st *Store, ch *Channel, entry x402.Requirements, p channel.Payload, resp *x402.PaidResponse) (*Paid, error) {
	paid := &Paid{PaidResponse: resp}
	r, err := readReport(resp)
	if err != nil || r == nil || !r.Success {
		return paid, err
	}
	price, _ := new(big.Int).SetString(entry.Amount, 10)
	charged := new(big.Int) // none said is none charged, as the official client reads it
	if r.Extra.ChargedAmount != "" {
		charged, err = channel.ParseAmount("extra.chargedAmount", r.Extra.ChargedAmount)
	}
	if err == nil && charged.Cmp(price) > 0 {
		err = fmt.Errorf("it is over the price %s", price)
	}
	if err == nil && r.Extra.ChannelState != nil && !strings.EqualFold(r.Extra.ChannelState.ChannelID, ch.ID.Hex()) {
		err = fmt.Errorf("its channel state is of channel %s", r.Extra.ChannelState.ChannelID)
	}
	if err != nil {
		return nil, fmt.Errorf("the server's report of the payment through channel %s is refused, and the channel's running "+
			"total was not advanced (it stays %s): it says it charged %q: %w", ch.ID.Hex(), ch.Charged, r.Extra.ChargedAmount, err)
	}
	rec := &Receipt{ID: ch.ID, Payer: ch.Config.Payer, Kind: p.Kind, Charged: charged}
	if p.Deposit != nil {
		rec.Deposit = p.Deposit.Amount
		ch.Balance = new(big.Int).Add(ch.Balance, p.Deposit.Amount)
		ch.State = StateOpen
	}
	total := new(big.Int).Add(ch.Charged, charged)
	cs := r.Extra.ChannelState
	if cs != nil && cs.ChargedCumulativeAmount != total.String() {
		rec.Note = fmt.Sprintf("the server's running total is %q, not this payer's %s: it stays %s until the server proves "+
			"its total with a voucher of this key", cs.ChargedCumulativeAmount, total, ch.Charged)
	} else {
		ch.Charged, ch.VoucherMax, ch.VoucherSignature = total, p.Voucher.MaxClaimableAmount, p.Voucher.Signature
	}
	ch.Updated = time.Now().UTC()
	if err := st.Save(); err != nil {
		return nil, err
	}
	rec.Total, rec.Balance = new(big.Int).Set(ch.Charged), new(big.Int).Set(ch.Balance)
	paid.Channel = rec
	return paid, nil
}

// correction reads a 402 answered to a channel payment as the official
// client does: a correction of the running total is terms whose error is
// exactly one of the two running-total codes, with no PAYMENT-RESPONSE.
func correction(resp *x402.PaidResponse) (x402.Quote, bool) {
	if resp.Header.Get(x402.HeaderPaymentResponse) != "" {
		return x402.Quote{}, false
	}
	q, err := x402.ReadTerms(resp)
	if err != nil || q.Version != 2 || (q.Error != channel.ReasonCumulativeMismatch && q.Error != channel.ReasonBelowClaimed) {
		return x402.Quote{}, false
	}
	return q, true
}

// correctionOf is the batch-settlement entry of a correction q that
// names ch (the key's channel under its terms), where the proof is. As the
// official client does, the payment is then made again for the entry first
// quoted, not for this one, whose extra carries the correction.
func correctionOf(q x402.Quote, key *ecdsa.PrivateKey, ch *Channel) (x402.Requirements, error) {
	for _, a := range q.Accepts {
		if a.Scheme != channel.Scheme {
			continue
		}
		extra, err := channel.ParseExtra(a)
		if err != nil {
			continue
		}
		chainID, err := x402.ChainID(a.Network)
		if err != nil {
			continue
		}
		if id, err := channel.ID(channel.NewConfig(key, a, extra, ch.Config.Salt), chainID); err == nil && id == ch.ID {
			return a, nil
		}
	}
	return x402.Requirements{}, fmt.Errorf("the server corrected the running total of channel %s (%s) with terms naming "+
		"no such channel; nothing was adopted and nothing more was signed", ch.ID.Hex(), q.Error)
}

// adopt takes the running total of a correction (code) whose entry is
// ch's, only as this key's own voucher on ch proves it, and only when it is
// not below what ch's total is known to be. The balance reported with it
// is taken when above the one known (after a lost state file, it spares a
// second deposit), never below it: the seller's word may spare a deposit,
// never cause one. The state is saved; an unproved correction is an error
// and changes nothing.
func adopt(st *Store, ch *Channel, entry x402.Requirements, code string) error {
	cs, vs, err := channel.ParseCorrective(entry)
	if err != nil {
		return fmt.Errorf("the server's correction of channel %s (%s) does not decode: %w", ch.ID.Hex(), code, err)
	}
	if vs == nil {
		return fmt.Errorf("the server says the running total of channel %s is wrong (%s) but shows no voucher of this "+
			"key proving its total (no voucherState); nothing was adopted and nothing more was signed", ch.ID.Hex(), code)
	}
	v := channel.Voucher{ChannelID: ch.ID}
	v.MaxClaimableAmount, err = channel.ParseAmount("voucherState.signedMaxClaimable", vs.SignedMaxClaimable)
	if err == nil {
		v.Signature, err = hexutil.Decode(vs.Signature)
	}
	if err == nil {
		var chainID *big.Int
		if chainID, err = x402.ChainID(ch.Network); err == nil {
			err = channel.CheckVoucherSignature(&v, ch.Config, chainID)
		}
	}
	if err == nil && v.MaxClaimableAmount.Cmp(ch.Charged) < 0 {
		err = fmt.Errorf("its total %s is below the %s this payer knows was charged", v.MaxClaimableAmount, ch.Charged)
	}
	if err != nil {
		return fmt.Errorf("the server's correction of channel %s (%s) is not proved by a voucher this key signed for that "+
			"channel and total: %w; nothing was adopted and nothing more was signed", ch.ID.Hex(), code, err)
	}
	ch.Charged, ch.VoucherMax, ch.VoucherSignature = v.MaxClaimableAmount, v.MaxClaimableAmount, v.Signature
	if b, ok := stateBalance(cs); ok && strings.EqualFold(cs.ChannelID, ch.ID.Hex()) && b.Cmp(ch.Balance) > 0 {
		ch.Balance = b
	}
	ch.Updated = time.Now().UTC()
	return st.Save()
}

// stateBalance is the balance of a seller's channel state, when it has a
// readable one.
func stateBalance(cs *channel.ChannelState) (*big.Int, bool) {
	if cs == nil {
		return nil, false
	}
	b, err := channel.ParseAmount("channelState.balance", cs.Balance)
	return b, err == nil
}
