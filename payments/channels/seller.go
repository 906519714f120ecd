package channels

import (
	"context"
	"log/slog"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/payments/internal/answer"
	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// Seller takes channel payments on every paid route. It is safe for
// concurrent use.
type Seller struct {
	store     Store
	reader    Reader
	depositor Depositor
	refunder  Refunder
	refunds   Refunds
	cfg       Config
	// authorizer is the receiver authorizer the terms name.
	authorizer common.Address
	chainID    *big.Int
	network    string
	// admit bounds the remote checks (deposits, adoptions from the chain)
	// by the gate's check slots.
	admit func(ctx context.Context) (release func(), err error)
	// holdFor is how long a reservation is held: the longest a call takes
	// from its reservation to its commit (the gate's payment window).
	holdFor time.Duration
	// wait is how long a voucher built on a concurrent call's projected
	// total waits for that call's commit (runtime.queue_wait).
	wait    time.Duration
	observe Observer
	// keep keeps paid answers for their retries; the zero value keeps none.
	keep answer.Keeping
	now  func() time.Time
	log  *slog.Logger
}

// Options are a Seller's parts.
type Options struct {
	Store     Store
	Reader    Reader
	Depositor Depositor
	// Refunder sends refunds; Refunds is the ledger's side of them.
	Refunder Refunder
	Refunds  Refunds
	Config   Config
	// Authorizer is the receiver authorizer quoted: the relayer, the
	// operator's key or the facilitator's (see payments).
	Authorizer common.Address
	// Network is the CAIP-2 network of the terms.
	Network string
	Admit   func(ctx context.Context) (release func(), err error)
	HoldFor time.Duration
	Wait    time.Duration
	// Observe, when set, is told how each payment and refund ended.
	Observe Observer
	// Keeping keeps paid answers for their retries (the gate's); the zero
	// value keeps none, as before retries.
	Keeping answer.Keeping
	Now     func() time.Time
	Log     *slog.Logger
}

// New returns a seller of o; o.Config must be validated.
func New(o Options) (*Seller, error) {
	chainID, err := x402.ChainID(o.Network)
	if err != nil {
		return nil, err
	}
	s := &Seller{store: o.Store, reader: o.Reader, depositor: o.Depositor, refunder: o.Refunder, refunds: o.Refunds,
		cfg:        o.Config.WithDefaults(),
		authorizer: o.Authorizer, chainID: chainID, network: o.Network, admit: o.Admit, holdFor: o.HoldFor,
		wait: o.Wait, observe: o.Observe, keep: o.Keeping, now: o.Now, log: o.Log}
	if s.observe == nil {
		s.observe = noObserver
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.admit == nil {
		s.admit = func(context.Context) (func(), error) { return func() {}, nil }
	}
	return s, nil
}

// Entry is the batch-settlement entry quoted beside exact's entry: the
// same price, asset, payee and timeout, with the channel terms.
func (s *Seller) Entry(exact x402.Requirements) x402.Requirements {
	price, _ := new(big.Int).SetString(exact.Amount, 10)
	minDeposit := new(big.Int).Mul(price, big.NewInt(minDepositMultiple))
	if s.cfg.MinDeposit != "" {
		if m, err := x402.ParsePrice(s.cfg.MinDeposit); err == nil {
			minDeposit = m
		}
	}
	if minDeposit.Cmp(price) < 0 {
		minDeposit = price
	}
	return channel.Entry(exact, channel.Extra{ReceiverAuthorizer: s.authorizer,
		WithdrawDelay: uint64(s.cfg.WithdrawDelay / time.Second), MinDeposit: minDeposit})
}

// Authorizer is the receiver authorizer the terms name.
func (s *Seller) Authorizer() common.Address { return s.authorizer }
