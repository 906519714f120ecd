package retries

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"sandboxd"
)

// Defaults of Options.
const (
	// DefaultMaxWaiters bounds the retries waiting at once on a replica
	// (the gate passes its max_checks).
	DefaultMaxWaiters = 64
	// DefaultPollEvery is how often a payment's poller reads its row.
	DefaultPollEvery = 50 * time.Millisecond
	// DefaultSweepEvery is how often the sweeper runs (the resolver's
	// cadence).
	DefaultSweepEvery = 30 * time.Second
	// sweepTimeout bounds one sweep pass.
	sweepTimeout = time.Minute
)

// Options are a Keeper's parts besides its Config and Store; the zero
// value is the defaults.
type Options struct {
	// Log receives the keeper's events; nil discards them.
	Log *slog.Logger
	// Observer is told what the keeper did; nil: nobody.
	Observer Observer
	// MaxWaiters bounds the retries waiting at once (0: DefaultMaxWaiters).
	MaxWaiters int
	// PollEvery is how often a poller reads its row (0: DefaultPollEvery).
	PollEvery time.Duration
	// SweepEvery is how often the sweeper runs (0: DefaultSweepEvery).
	SweepEvery time.Duration
}

// Keeper decides whether a payment is the retry of an answered request,
// and answers the retries. It is safe for concurrent use.
type Keeper struct {
	cfg   Config
	store Store
	log   *slog.Logger
	obs   Observer
	opts  Options

	mu      sync.Mutex
	watches map[watchKey]*watch // the pollers, by payment
	waiters int                 // retries waiting, all payments
	// stored counts the bytes kept since the last sweep, lastBytes what
	// that sweep left: a replica that stores past MaxBytes sweeps at once.
	stored, lastBytes int64
	sweepNow          chan struct{}
}

// New returns the keeper of cfg (validated, with its defaults) reading
// store.
func New(cfg Config, store Store, o Options) *Keeper {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Observer == nil {
		o.Observer = noObserver{}
	}
	if o.MaxWaiters <= 0 {
		o.MaxWaiters = DefaultMaxWaiters
	}
	if o.PollEvery <= 0 {
		o.PollEvery = DefaultPollEvery
	}
	if o.SweepEvery <= 0 {
		o.SweepEvery = DefaultSweepEvery
	}
	return &Keeper{cfg: cfg, store: store, log: o.Log, obs: o.Observer, opts: o,
		watches: map[watchKey]*watch{}, sweepNow: make(chan struct{}, 1)}
}

// Config returns the keeper's configuration.
func (k *Keeper) Config() Config { return k.cfg }

// Query is a verified payment and the request it came with.
type Query struct {
	// Payer is the verified payer (lower-case address).
	Payer string
	// Key is the payment's key: an exact payment's nonce (lower-case
	// 0x hex), a channel payment's voucher key.
	Key string
	// ID is the payment's payment-identifier id, "" when none.
	ID string
	// Request is the hash of the request's identity
	// (sandboxd.PaymentRequest.Request).
	Request string
	// Fresh is the caller's part of freshness: an exact payment valid
	// now (x402.CheckTime passes), a voucher that is its channel's next
	// increment. An exact payment is fresh only when, besides, the ledger
	// holds no payments row of it (or a released one).
	Fresh bool
}

// Find looks the payment up (one LookupAnswer) and returns, in the order
// of docs/design/retries.md §4.3:
//   - a Replay by id: the payer's id is kept for the same request, and the
//     payment is that answer's own or fresh;
//   - a CodeConflict *sandboxd.Error (no RetryAfter): the same id, with a
//     payment its own or fresh, for another request;
//   - a Replay by payment: the payment's own answer, for the same request;
//   - (nil, nil): nothing to replay; the payment goes the normal way (an
//     old payment with another request is refused there as today);
//   - a CodeUnavailable *sandboxd.Error when the ledger cannot be read.
func (k *Keeper) Find(ctx context.Context, q Query) (sandboxd.Replay, error) {
	began := time.Now()
	l, err := k.store.LookupAnswer(ctx, q.Payer, q.Key, q.ID)
	k.obs.Lookup(l.ByKey != nil || l.ByID != nil, time.Since(began))
	if err != nil {
		return nil, readFailed(ctx, "retries.find", err)
	}
	fresh := q.Fresh && (l.Payment == "" || l.Payment == paymentReleased)
	if m := l.ByID; q.ID != "" && m != nil && (m.Key == q.Key || fresh) {
		if m.Request != q.Request {
			k.obs.Replay(sandboxd.ReplayByID, OutcomeConflict, 0)
			k.log.Info("payment id used for another request", "payer", q.Payer, "id", short(q.ID))
			return nil, idConflict(q.ID)
		}
		return k.replay(q.Payer, sandboxd.ReplayByID, *m), nil
	}
	if m := l.ByKey; m != nil && m.Request == q.Request {
		return k.replay(q.Payer, sandboxd.ReplayByPayment, *m), nil
	}
	return nil, nil
}

// Raced is called when a Reserve lost to a concurrent request with the
// same payment or id (the ledger's unique key or the channel's
// compare-and-set): it re-reads the winner's row and returns a
// CodeConflict *sandboxd.Error whose Replay answers the winner's answer
// (the same request), a CodeConflict without one (the same id for
// another request), nil when no row is kept for either (the caller
// refuses as it did before retries), or CodeUnavailable.
func (k *Keeper) Raced(ctx context.Context, q Query) error {
	q.Fresh = true // it got as far as its reservation: its payment is new
	r, err := k.Find(ctx, q)
	if err != nil || r == nil {
		return err
	}
	return &sandboxd.Error{Code: sandboxd.CodeConflict, Op: "retries.raced", Replay: r,
		Message: "a request with this payment is already being answered; this one is answered with it"}
}

// Stored is told by a settlement that it stored an answer of size bytes,
// kept or not (over MaxAnswerBytes): it counts it, and runs a sweep at
// once when what this replica stored since the last one would take the
// ledger over MaxBytes.
func (k *Keeper) Stored(size int64, kept bool) {
	k.obs.Kept(kept)
	if !kept {
		return
	}
	k.mu.Lock()
	k.stored += size
	over := k.lastBytes+k.stored > int64(k.cfg.MaxBytes)
	k.mu.Unlock()
	if over {
		select {
		case k.sweepNow <- struct{}{}:
		default: // one is asked for already
		}
	}
}

// idConflict is the refusal of an id used by the payer for another request.
func idConflict(id string) error {
	return sandboxd.Errorf(sandboxd.CodeConflict, "retries.find", "payment id %s was already used by this payer for "+
		"another request (another route or body); use a new id for a new request. Nothing was reserved or "+
		"charged for this one.", short(id))
}

// readFailed is the error of a ledger read that failed: ctx's own when it
// ended, the ledger's *sandboxd.Error, else CodeUnavailable.
func readFailed(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var e *sandboxd.Error
	if errors.As(err, &e) {
		return err
	}
	return sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "the payment ledger cannot be read; nothing was reserved "+
		"or charged, try again later")
}

// short is the first 8 characters of an id, as logs and messages show it.
func short(id string) string {
	if len(id) <= 8 {
		return id
	}
	return fmt.Sprintf("%s…", id[:8])
}
