package channels

import (
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"sandboxd"
	"sandboxd/payments/ledger"
	"sandboxd/x402/channel"
)

// corrective is the corrective 402 of a voucher whose running total is
// not the charged total plus the price: the channel's state and the
// voucher the charged total rests on, so the official client adopts it
// and retries once. While another request holds the channel, the state is
// the projected one (its increment counted, its voucher shown: the
// payer's own), so the retry lines up behind it (Reserve waits for it).
func (s *Seller) corrective(r Request, code string, row ledger.Channel, cause error) error {
	const op = "channels.check"
	s.observe(OpVoucher, OutcomeCorrective, 0)
	cs, vs := s.channelState(row, true)
	entry, err := channel.Corrective(r.Entry, cs, vs)
	if err != nil {
		return sandboxd.Wrap(sandboxd.CodeInternal, op, err, "cannot build the corrective terms")
	}
	return r.Terms.Corrective(op, code, entry, cause)
}

// channelState is row as a channelState, and the voucher its charged total
// rests on (nil before the first charge). With projected, a live hold's
// increment counts as charged and its voucher is shown.
func (s *Seller) channelState(row ledger.Channel, projected bool) (channel.ChannelState, *channel.VoucherState) {
	charged, max, sig := orZero(row.Charged), orZero(row.VoucherMax), row.VoucherSig
	if h := s.liveHold(row); projected && h != nil {
		charged, max, sig = new(big.Int).Add(charged, h.Amount), h.Max, h.Sig
	}
	cs := channel.ChannelState{ChannelID: row.ID, Balance: orZero(row.Balance).String(), TotalClaimed: orZero(row.Claimed).String(),
		WithdrawRequestedAt: uint64(max0(row.WithdrawAt)), RefundNonce: orZero(row.RefundNonce).String(),
		ChargedCumulativeAmount: charged.String()}
	if len(sig) == 0 {
		return cs, nil
	}
	return cs, &channel.VoucherState{SignedMaxClaimable: max.String(), Signature: hexutil.Encode(sig)}
}

// busy is the refusal of a payment on a channel another request holds
// past the wait, or that a refund holds: retry after a second.
func (s *Seller) busy(r Request, op, why string) error {
	s.observe(OpVoucher, OutcomeRefused, 0)
	e := r.Terms.Refuse(op, "payment refused: "+why+"; nothing was charged, retry after the time in Retry-After ("+
		ReasonChannelBusy+")", nil)
	e.RetryAfter = time.Second
	return e
}

// ReasonChannelBusy: another request or a refund holds the channel.
const ReasonChannelBusy = "invalid_batch_settlement_evm_channel_busy"

// max0 is n, or 0 when negative.
func max0(n int64) int64 { return max(n, 0) }
