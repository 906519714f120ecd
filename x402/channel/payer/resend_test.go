package payer_test

import (
	"strings"
	"testing"
	"time"

	"sandboxd/x402"
	"sandboxd/x402/channel/channeltest"
	"sandboxd/x402/channel/payer"
)

// resending makes f's seller declare payment-identifier and lose the
// answers of the next drop paid requests, replaying kept answers when
// replay; f's payer sends id and asks again up to retries times. It
// returns the notes the payer will write.
func (f *payerFixture) resending(drop, retries int, replay bool, id string) *[]string {
	notes := &[]string{}
	f.seller.Set(func(k *channeltest.Knobs) { k.Drop, k.Replay, k.PaymentID = drop, replay, true })
	f.policy.Resend = x402.Resend{PaymentID: id, Retries: retries, Backoff: time.Millisecond,
		Note: func(s string) { *notes = append(*notes, s) }}
	return notes
}

// wantSameTwice fails unless the seller got one payment header twice,
// carrying id.
func (f *payerFixture) wantSameTwice(id string) {
	f.tb.Helper()
	h := f.seller.Headers()
	if len(h) != 2 || h[0] != h[1] || channeltest.PaymentID(h[0]) != id {
		f.tb.Fatalf("%d payment headers, the same: %v, id %q: want one header twice, with id %s",
			len(h), len(h) == 2 && h[0] == h[1], channeltest.PaymentID(h[0]), id)
	}
}

// mustLose makes a call whose answer stays lost: an error, after sends
// payments sent (all told), and nothing counted in the state file.
func (f *payerFixture) mustLose(sends int) {
	f.tb.Helper()
	if _, err := f.pay(); err == nil {
		f.tb.Fatal("no error for an answer lost for good")
	}
	if n := f.seller.Paid(); n != sends {
		f.tb.Fatalf("sent %d payments, want %d", n, sends)
	}
	if chs := f.mustChannels(); len(chs) != 0 {
		f.tb.Fatalf("state %+v: want nothing counted", chs[0])
	}
}

// TestPayChannelResendsLostAnswer: the answer to a deposit and its voucher
// is lost on the way; the payer sends the same payment (voucher, deposit
// and id) again, takes the seller's replay, and counts the call once: the
// next call is the next voucher.
func TestPayChannelResendsLostAnswer(t *testing.T) {
	f := newPayer(t)
	id := x402.NewPaymentID()
	notes := f.resending(1, 3, true, id)
	paid, err := f.pay()
	if err != nil || paid.StatusCode != 200 || !paid.Replayed || paid.Resent != 1 || paid.Channel == nil {
		t.Fatalf("answer %+v, %v", paid, err)
	}
	f.wantSameTwice(id)
	if len(*notes) != 1 || !strings.Contains((*notes)[0], "asking again with the same payment") {
		t.Fatalf("notes %q", *notes)
	}
	if ch := f.mustOne(); ch.Charged.String() != "5000" || ch.Balance.String() != "50000" {
		t.Fatalf("state %+v: want the call counted once", ch)
	}
	if n := len(f.seller.Payments()); n != 1 {
		t.Fatalf("the seller took %d payments, want 1", n)
	}
	f.policy.Resend.PaymentID = x402.NewPaymentID() // a new call, a new id
	if rec := f.mustPay(); rec.Total.String() != "10000" || f.seller.Correctives() != 0 {
		t.Fatalf("next call %+v, %d correctives", rec, f.seller.Correctives())
	}
}

// TestPayExactResendsLostAnswer: an exact payment whose answer is lost is
// sent again, the same authorization and id.
func TestPayExactResendsLostAnswer(t *testing.T) {
	f := newPayer(t)
	f.policy.Scheme = payer.SchemeExact
	id := x402.NewPaymentID()
	f.resending(1, 3, true, id)
	paid, err := f.pay()
	if err != nil || paid.StatusCode != 200 || !paid.Replayed || paid.Channel != nil {
		t.Fatalf("answer %+v, %v", paid, err)
	}
	f.wantSameTwice(id)
}

// TestPayChannelNoRetries: with no retries a lost answer is an error, the
// payment was sent once, and the running total did not move.
func TestPayChannelNoRetries(t *testing.T) {
	f := newPayer(t)
	id := x402.NewPaymentID()
	notes := f.resending(1, 0, true, id)
	f.mustLose(1)
	if len(*notes) != 1 || !strings.Contains((*notes)[0], "--payment-id "+id) {
		t.Fatalf("notes %q: want the id to ask again with", *notes)
	}
}

// TestPayChannelResendsBounded: answers lost every time are asked for
// again Retries times, and the running total never moves.
func TestPayChannelResendsBounded(t *testing.T) {
	f := newPayer(t)
	f.resending(100, 2, true, x402.NewPaymentID())
	f.mustLose(3)
}

// TestPayChannelResendCorrected: a seller that keeps no answers corrects
// the resent voucher with this key's own voucher: the charge is adopted,
// nothing more is signed or sent (no blind second payment), and the error
// says so.
func TestPayChannelResendCorrected(t *testing.T) {
	f := newPayer(t)
	f.resending(1, 3, false, x402.NewPaymentID())
	_, err := f.pay()
	if err == nil || !strings.Contains(err.Error(), "does not give answers again") {
		t.Fatalf("err %v", err)
	}
	if n, c := f.seller.Paid(), f.seller.Correctives(); n != 2 || c != 1 {
		t.Fatalf("%d payments, %d correctives: want the payment and its resend, corrected once", n, c)
	}
	if ch := f.mustOne(); ch.Charged.String() != "5000" {
		t.Fatalf("state %+v: want the seller's charge adopted", ch)
	}
}

// TestPayChannelSameIDLater: a call whose answer was lost for good is made
// again with the same payment id (a rerun with --payment-id): the seller
// replays the first answer by its id, and the call is counted once.
func TestPayChannelSameIDLater(t *testing.T) {
	f := newPayer(t)
	id := x402.NewPaymentID()
	f.resending(1, 0, true, id)
	f.mustLose(1)
	paid, err := f.pay()
	if err != nil || paid.StatusCode != 200 || !paid.Replayed || paid.Channel == nil {
		t.Fatalf("answer %+v, %v", paid, err)
	}
	if ch := f.mustOne(); ch.Charged.String() != "5000" || len(f.seller.Payments()) != 1 {
		t.Fatalf("state %+v, %d payments taken: want the call counted and taken once", ch, len(f.seller.Payments()))
	}
}
