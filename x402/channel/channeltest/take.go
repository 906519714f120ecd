package channeltest

import (
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// take verifies a channel payment (a refund when refund) and answers it;
// s.mu is held.
func (s *Seller) take(w http.ResponseWriter, k Knobs, refund bool, accepted x402.Requirements, raw json.RawMessage) {
	entry := channel.Entry(k.Exact, k.Extra)
	p, acct, state, ok := s.verify(w, k, refund, entry, accepted, raw)
	if !ok {
		return
	}
	s.payments = append(s.payments, p)
	s.accounts[p.Voucher.ChannelID] = acct
	report := map[string]any{"success": true, "transaction": "", "network": entry.Network,
		"payer": strings.ToLower(p.Config.Payer.Hex()), "amount": ""}
	charged, _ := new(big.Int).SetString(entry.Amount, 10)
	switch {
	case refund:
		charged = new(big.Int)
		report["amount"] = new(big.Int).Sub(state.Balance, acct.Charged).String()
		report["transaction"] = hexutil.Encode(p.Voucher.Signature[:32])
		state.Balance = new(big.Int).Set(acct.Charged)
	case p.Deposit != nil:
		report["amount"] = p.Deposit.Amount.String()
		report["transaction"] = hexutil.Encode(p.Deposit.Signature[:32])
	}
	acct.Charged, acct.Balance = p.Voucher.MaxClaimableAmount, state.Balance
	acct.Max, acct.Signature = p.Voucher.MaxClaimableAmount, p.Voucher.Signature
	if k.Report != nil {
		charged = k.Report
	}
	report["extra"] = map[string]any{"chargedAmount": charged.String(), "channelState": channelState(p.Voucher.ChannelID.Hex(), acct)}
	s.answer(w, report)
}

// verify checks a payment as the design's seller does and returns it, the
// channel's account and its state with the deposit counted; when it does
// not pass, the refusal is answered and ok is false.
func (s *Seller) verify(w http.ResponseWriter, k Knobs, refund bool, entry, accepted x402.Requirements, raw json.RawMessage) (
	p channel.Payload, acct *Account, state channel.State, ok bool) {
	a, _ := json.Marshal(accepted)
	e, _ := json.Marshal(entry)
	if string(a) != string(e) {
		s.quote(w, k, "invalid_payment_requirements", nil)
		return p, nil, state, false
	}
	p, err := channel.Decode(raw)
	if err != nil {
		http.Error(w, `{"error":"the payload does not decode"}`, http.StatusBadRequest)
		return p, nil, state, false
	}
	if (p.Kind == channel.KindRefund) != refund {
		s.quote(w, k, channel.ReasonPayloadType, nil)
		return p, nil, state, false
	}
	if acct = s.accounts[p.Voucher.ChannelID]; acct == nil {
		acct = &Account{Charged: new(big.Int), Balance: new(big.Int)}
	}
	state = channel.State{Charged: acct.Charged, Balance: new(big.Int).Set(acct.Balance)}
	err = channel.CheckConfig(p.Config, entry)
	if err == nil && p.Deposit != nil {
		if err = channel.VerifyDeposit(p.Deposit, p.Config, entry, time.Now()); err == nil {
			state.Balance.Add(state.Balance, p.Deposit.Amount)
		}
	}
	if err == nil {
		chainID, _ := x402.ChainID(entry.Network)
		price, _ := new(big.Int).SetString(entry.Amount, 10)
		if refund {
			price = new(big.Int)
		}
		err = channel.VerifyVoucher(&p.Voucher, p.Config, chainID, price, state)
	}
	var rej *x402.RejectError
	switch {
	case errors.As(err, &rej) && (rej.Reason == channel.ReasonCumulativeMismatch || rej.Reason == channel.ReasonBelowClaimed):
		s.correct(w, k, entry, rej.Reason, p.Voucher.ChannelID, acct)
	case err != nil:
		s.refuse(w, k, err)
	default:
		return p, acct, state, true
	}
	return p, nil, state, false
}

// refuse answers a refusal other than a wrong total: 402 with the reason.
func (s *Seller) refuse(w http.ResponseWriter, k Knobs, err error) {
	var rej *x402.RejectError
	if !errors.As(err, &rej) {
		s.tb.Errorf("seller: %v", err)
		http.Error(w, `{"error":"internal"}`, http.StatusInternalServerError)
		return
	}
	s.quote(w, k, rej.Reason, nil)
}

// correct answers a wrong running total with the corrective 402: the bare
// code, the channel's state, and the last voucher taken (signed by
// k.Forger instead when set), none when nothing was taken.
func (s *Seller) correct(w http.ResponseWriter, k Knobs, entry x402.Requirements, reason string, id [32]byte, acct *Account) {
	s.correctives++
	var vs *channel.VoucherState
	if acct.Max != nil {
		sig := acct.Signature
		if k.Forger != nil {
			chainID, _ := x402.ChainID(entry.Network)
			var err error
			if sig, err = channel.SignVoucher(k.Forger, id, acct.Max, chainID); err != nil {
				s.tb.Error(err)
			}
		}
		vs = &channel.VoucherState{SignedMaxClaimable: acct.Max.String(), Signature: hexutil.Encode(sig)}
	}
	corrective, err := channel.Corrective(entry, channelState(hexutil.Encode(id[:]), acct), vs)
	if err != nil {
		s.tb.Error(err)
	}
	s.quote(w, k, reason, &corrective)
}

// channelState is acct as a channelState.
func channelState(id string, acct *Account) channel.ChannelState {
	return channel.ChannelState{ChannelID: strings.ToLower(id), Balance: acct.Balance.String(), TotalClaimed: "0",
		RefundNonce: "0", ChargedCumulativeAmount: acct.Charged.String()}
}
