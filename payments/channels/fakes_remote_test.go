package channels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sync"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd"
	"sandboxd/payments/chain"
	"sandboxd/payments/internal/remote"
	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// fakeReader is the escrow's state of each channel; a channel it does not
// know reads as zeros, as the escrow's does.
type fakeReader struct {
	mu     sync.Mutex
	states map[common.Hash]chain.ChannelState
	reads  int
}

var _ Reader = (*fakeReader)(nil)

func (r *fakeReader) ReadChannels(_ context.Context, ids []common.Hash) ([]chain.ChannelState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	out := make([]chain.ChannelState, len(ids))
	for i, id := range ids {
		st, ok := r.states[id]
		if !ok {
			st = chain.ChannelState{ID: id, Balance: new(big.Int), TotalClaimed: new(big.Int),
				WithdrawAmount: new(big.Int), RefundNonce: new(big.Int)}
		}
		out[i] = st
	}
	return out, nil
}

// The outcomes a fakeDepositor's Deposit is programmed with.
const (
	depositOK      = "ok"
	depositRefused = "refused"
	depositNotSent = "not sent"
	depositUnknown = "unknown"
)

// fakeDepositor checks every deposit as collectable (unless checkErr) and
// collects it with the programmed outcome.
type fakeDepositor struct {
	mu       sync.Mutex
	checkErr error
	outcome  string
	// balance is the channel's escrow balance before the next deposit.
	balance  *big.Int
	checks   int
	deposits int
}

var _ Depositor = (*fakeDepositor)(nil)

// fakeTx is the deposit transaction the fake reports.
const fakeTx = "0x1111111111111111111111111111111111111111111111111111111111111111"

func (d *fakeDepositor) CheckDeposit(context.Context, *x402.Payment, *channel.Payload) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.checks++
	return d.checkErr
}

func (d *fakeDepositor) Deposit(_ context.Context, _ *x402.Payment, pl *channel.Payload) (chain.OpReceipt, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deposits++
	switch d.outcome {
	case depositRefused:
		return chain.OpReceipt{Tx: fakeTx}, x402.Reject("invalid_batch_settlement_evm_deposit_transaction_failed",
			"the deposit transaction reverted")
	case depositNotSent:
		return chain.OpReceipt{}, sandboxd.Wrap(sandboxd.CodeUnavailable, "fake.deposit",
			fmt.Errorf("connection refused: %w", remote.ErrNotSent), "the chain cannot be reached")
	case depositUnknown:
		return chain.OpReceipt{Tx: fakeTx}, sandboxd.Wrap(sandboxd.CodeUnavailable, "fake.deposit",
			errors.New("timeout waiting for the receipt"), "the deposit's outcome is not known")
	}
	d.balance = new(big.Int).Add(orZero(d.balance), pl.Deposit.Amount)
	return chain.OpReceipt{Tx: fakeTx, GasUsed: 60000, Amount: new(big.Int).Set(pl.Deposit.Amount),
		NewBalance: new(big.Int).Set(d.balance)}, nil
}

// fakeTerms answers refusals as payments' quote does, CodePayment with the
// terms (the PaymentRequired of entry, or of the corrective entry with the
// bare code as its error), and records what it was asked.
type fakeTerms struct {
	entry       x402.Requirements
	mu          sync.Mutex
	refusals    []string
	correctives []string
}

var _ Terms = (*fakeTerms)(nil)

func (t *fakeTerms) Refuse(op, message string, cause error) *sandboxd.Error {
	t.mu.Lock()
	t.refusals = append(t.refusals, message)
	t.mu.Unlock()
	return t.terms(op, message, message, t.entry, cause)
}

func (t *fakeTerms) Corrective(op, code string, entry x402.Requirements, cause error) *sandboxd.Error {
	t.mu.Lock()
	t.correctives = append(t.correctives, code)
	t.mu.Unlock()
	return t.terms(op, code, code, entry, cause)
}

// asked returns how many refusals and correctives were asked for.
func (t *fakeTerms) asked() (refusals, correctives int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.refusals), len(t.correctives)
}

// terms is the CodePayment error quoting entry with errorText.
func (t *fakeTerms) terms(op, message, errorText string, entry x402.Requirements, cause error) *sandboxd.Error {
	v2, err := json.Marshal(x402.PaymentRequired{X402Version: 2, Error: errorText, Accepts: []x402.Requirements{entry},
		Extensions: map[string]any{}})
	if err != nil {
		panic(err)
	}
	return &sandboxd.Error{Code: sandboxd.CodePayment, Op: op, Message: message, Err: cause,
		Payment: &sandboxd.PaymentDetails{Terms: &sandboxd.PaymentTerms{V2: v2}}}
}
