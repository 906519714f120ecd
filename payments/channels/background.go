package channels

import (
	"context"
	"log/slog"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/payments/chain"
	"sandboxd/x402"
)

// Background keeps the channels' rows true to the escrow (the mirror, on
// every replica) and claims what was charged (the claimer, on the one
// replica holding the fleet's lease).
type Background struct {
	books     Books
	reader    Reader
	claimer   Claimer
	cfg       Config
	receiver  common.Address
	token     common.Address
	threshold *big.Int
	observer  Observer
	gauges    Gauges
	now       func() time.Time
	log       *slog.Logger
	stop      context.CancelFunc
	done      chan struct{}
	// failedAt is when the last claim pass failed: the next waits
	// claimRetry after it.
	failedAt time.Time
	// held is whether this replica held the claimer lease when it last
	// looked, at leaseAt.
	held    bool
	leaseAt time.Time
	// summedAt is when claimDue last summed the unclaimed charges.
	summedAt time.Time
}

// leaseCheck is how often the claimer takes or keeps its lease (a ledger
// write): the lease follows the replicas' heartbeats, so keeping it needs
// no write a second, and a dead holder's is taken within this.
const leaseCheck = 5 * time.Second

// claimRetry is how long a failed claim pass waits before the next.
const claimRetry = 30 * time.Second

// BackgroundOptions are a Background's parts.
type BackgroundOptions struct {
	Books   Books
	Reader  Reader
	Claimer Claimer
	Config  Config
	// Receiver and Token are payTo and the asset: what is swept, to whom.
	Receiver, Token common.Address
	// Observe, when set, is told of every claim and sweep: its op
	// ("claim", "sweep"), outcome ("mined", "failed") and gas.
	Observe Observer
	// Gauges, when set, is told the unclaimed total and the mirror's age
	// after each mirror and claim pass.
	Gauges Gauges
	Now    func() time.Time
	Log    *slog.Logger
}

// NewBackground returns the background of o, not started.
func NewBackground(o BackgroundOptions) *Background {
	b := &Background{books: o.Books, reader: o.Reader, claimer: o.Claimer, cfg: o.Config.WithDefaults(), receiver: o.Receiver,
		token: o.Token, observer: o.Observe, gauges: o.Gauges, now: o.Now, log: o.Log}
	b.threshold, _ = x402.ParsePrice(b.cfg.ClaimThreshold)
	if b.threshold == nil {
		b.threshold = big.NewInt(1)
	}
	if b.now == nil {
		b.now = time.Now
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	return b
}

// claimerTick is how often the claimer checks its lease and whether a
// pass is due (a withdrawal or `sandboxd ledger claim` is served within it).
const claimerTick = time.Second

// Start runs the mirror and the claimer until Close.
func (b *Background) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	b.stop, b.done = cancel, make(chan struct{})
	go func() {
		defer close(b.done)
		mirror := time.NewTicker(b.cfg.MirrorEvery)
		claim := time.NewTicker(claimerTick)
		defer mirror.Stop()
		defer claim.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-mirror.C:
				if _, err := b.mirrorPass(ctx); err != nil && ctx.Err() == nil {
					b.log.Warn("channel mirror pass failed; vouchers are refused once a row is older than its max age",
						"max_age", b.cfg.MirrorMaxAge(), "err", err)
				}
				b.gauge(ctx)
			case <-claim.C:
				b.claimTick(ctx)
			}
		}
	}()
}

// claimTick takes or renews the lease and runs a pass when one is due.
func (b *Background) claimTick(ctx context.Context) {
	if b.claimer == nil || b.now().Sub(b.failedAt) < claimRetry {
		return
	}
	if now := b.now(); now.Sub(b.leaseAt) >= leaseCheck {
		held, err := b.books.TakeClaimer(ctx)
		b.held, b.leaseAt = held && err == nil, now
	}
	if !b.held {
		return
	}
	due, err := b.claimDue(ctx, b.now())
	if err != nil || !due {
		return
	}
	if _, err := b.ClaimPass(ctx); err != nil && ctx.Err() == nil {
		b.failedAt = b.now()
		b.log.Warn("claim pass failed; retried later", "after", claimRetry, "err", err)
	}
	b.gauge(ctx)
}

// Close stops the loops and waits for a pass under way.
func (b *Background) Close() error {
	if b.stop != nil {
		b.stop()
		<-b.done
	}
	return nil
}

// observe reports a claim or sweep to the observer.
func (b *Background) observe(op string, rcpt chain.OpReceipt, err error) {
	if b.observer == nil {
		return
	}
	outcome := "mined"
	if err != nil {
		outcome = "failed"
	}
	b.observer(op, outcome, rcpt.GasUsed)
}
