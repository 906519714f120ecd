package payments

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"sandboxd"
	"sandboxd/internal/slots"
	"sandboxd/payments/chain"
	"sandboxd/payments/channels"
	"sandboxd/payments/internal/answer"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
)

// Gate is the x402 payment gate: it quotes terms to unpaid requests, and
// admits a request whose payment verifies locally, passes the settler's
// remote check (bounded by its own limit, holding no sandbox slot), and
// reserves in the ledger once a slot is held.
type Gate struct {
	// parts are what each authorization and charge is handed: the terms,
	// the ledger, the settler and the charges in flight (see charge.go);
	// those of a call for an environment that sets no price of its own.
	parts
	// priced are the parts of the environments with a price of their own,
	// by name: their terms quote that price, the rest is shared.
	priced map[string]*parts
	// quotes are the parts of the prices requests set themselves
	// (PaymentRequest.Price), made on first use from cfg.
	quotes  quotes
	log     *slog.Logger
	now     func() time.Time
	closers []io.Closer
	// checks bounds the remote checks at once; window is the validity a
	// payment must have left when checked (Config.Window).
	checks *slots.Slots
	window time.Duration
	// drain bounds how long Close waits for the charges in flight.
	drain time.Duration
	// sql is the ledger NewGate opened (Ledger).
	sql *ledger.SQL
	// seller takes batch-settlement payments; nil when channels are not
	// offered.
	seller *channels.Seller
}

// Ledger returns the ledger NewGate opened, which the fleet's session
// registry shares (ledger.SQL.Registry); nil for a gate built from parts.
// The gate closes it.
func (g *Gate) Ledger() *ledger.SQL { return g.sql }

var _ sandboxd.PaymentGate = (*Gate)(nil)

// options are the parts of a Gate that NewGate builds from the
// configuration, given directly (tests pass a fake settler and a clock).
type options struct {
	// Settler checks and collects payments. Required.
	Settler Settler
	// Ledger records payments. Required; the Gate does not close it.
	Ledger Ledger
	// Log receives the gate's events; nil discards them.
	Log *slog.Logger
	// Now is the clock verification uses; nil means time.Now.
	Now func() time.Time
	// Run is what bounds a run, for the validity window (Config.Window).
	Run RunBounds
	// Drain bounds how long Close waits for settlements in flight; zero
	// means the settle timeout plus two ledger writes.
	Drain time.Duration
	// Seller, when set, takes batch-settlement payments, quoted after
	// exact's entry.
	Seller *channels.Seller
	// Keeping keeps paid answers for their retries; the zero value keeps
	// none.
	Keeping answer.Keeping
}

// Check decodes the payment header, verifies it locally (its validity
// window included), then asks the settler whether it would settle, holding
// one of the gate's check slots (never a sandbox) for that remote call
// only. See sandboxd.PaymentGate for the errors.
func (g *Gate) Check(ctx context.Context, r sandboxd.PaymentRequest) (sandboxd.Authorization, error) {
	const op = "payments.check"
	pt, err := g.partsOf(r)
	if err != nil {
		return nil, err
	}
	p, err := x402.DecodePayment(r.Signature, r.XPayment)
	if err != nil {
		return nil, headerInvalid(err)
	}
	if p == nil {
		if r.ReplayOnly {
			return nil, nil
		}
		return nil, pt.paymentError(op, r.ResourceURL, fmt.Sprintf(
			"payment required: this call costs %s; pay with x402 (terms in the PAYMENT-REQUIRED header)", pt.priceText()), nil)
	}
	spec, err := g.answerSpec(r, p)
	if err != nil {
		return nil, err
	}
	if p.Scheme == x402.SchemeBatchSettlement && pt.batch != nil && p.Version == 2 {
		return g.checkChannel(ctx, r, pt, p, spec)
	}
	if g.keep.On() && r.Request != "" {
		return g.checkKept(ctx, r, pt, p, spec)
	}
	if r.ReplayOnly {
		return nil, nil
	}
	now := g.now()
	if err := x402.Verify(pt.req, p, now); err != nil {
		g.log.Info("payment refused", "check", "verify", "reason", x402.RejectReason(err, ""),
			"payer", p.Exact.Authorization.From, "nonce", p.Exact.Authorization.Nonce, "err", err)
		return nil, pt.refusal(op, r.ResourceURL, err)
	}
	p.Quoted = pt.quoted(r)
	t := p.Transfer
	log := g.log.With("payer", t.Payer(), "nonce", t.NonceHex(), "x402_version", p.Version)
	if err := x402.CheckWindow(t, now, g.window); err != nil {
		log.Info("payment refused", "check", "window", "reason", x402.ReasonValidBefore, "err", err)
		return nil, pt.refusal(op, r.ResourceURL, err)
	}
	release, err := g.checks.Admit(ctx)
	if err != nil {
		return nil, checksBusy(err)
	}
	defer release()
	return g.checkRemote(ctx, r, pt, p, log, nil)
}

// checkRemote asks the settler whether the verified payment p would
// settle (the caller holds a check slot) and returns its authorization,
// keeping claim's answer.
func (g *Gate) checkRemote(ctx context.Context, r sandboxd.PaymentRequest, pt *parts, p *x402.Payment, log *slog.Logger,
	claim *answer.Claim) (sandboxd.Authorization, error) {
	if err := g.settler.Check(ctx, p); err != nil {
		log.Info("payment refused", "check", "settler", "reason", x402.RejectReason(err, ""), "err", err)
		return nil, pt.refusal("payments.check", r.ResourceURL, err)
	}
	return &authorization{parts: pt, p: p, resourceURL: r.ResourceURL, log: log, claim: claim}, nil
}

// partsFor returns the parts of a call in the environment: its own terms
// when it sets a price, else the gate's ("" is the default environment).
func (g *Gate) partsFor(environment string) *parts {
	if pt, ok := g.priced[environment]; ok {
		return pt
	}
	return &g.parts
}

// headerInvalid classifies an error of x402.DecodePayment: a header
// that does not decode is the caller's CodeInvalid.
func headerInvalid(err error) error {
	var he *x402.HeaderError
	if !errors.As(err, &he) {
		return err
	}
	return sandboxd.Wrap(sandboxd.CodeInvalid, "payments.decode", he.Err, fmt.Sprintf(
		"the %s header does not decode: %v; it must be base64 of one x402 payment JSON object", he.Header, he.Err))
}

// checksBusy turns a full check queue into the gate's own 429: the
// sandboxes may well be free, it is the checks that are not.
func checksBusy(err error) error {
	if sandboxd.ErrorCode(err) != sandboxd.CodeBusy {
		return err
	}
	return &sandboxd.Error{Code: sandboxd.CodeBusy, Op: "payments.check", Err: err, RetryAfter: time.Second,
		Message: "too many payments are being checked at once; nothing was reserved or charged, retry after the time in Retry-After"}
}

// newGate returns a Gate quoting the terms of cfg, already validated,
// with the given parts. It opens nothing and runs no recovery.
func newGate(cfg Config, o options) (*Gate, error) {
	if o.Settler == nil || o.Ledger == nil {
		return nil, errors.New("payments: a gate needs a settler and a ledger")
	}
	req, err := cfg.Requirements()
	if err != nil {
		return nil, err
	}
	g := &Gate{parts: parts{quote: quote{req: req, description: description}, ledger: o.Ledger, settler: o.Settler, charges: &charges{},
		keep: o.Keeping},
		priced: map[string]*parts{}, quotes: quotes{cfg: cfg, byPrice: map[string]*parts{}}, log: o.Log, now: o.Now,
		checks: slots.New(cfg.maxChecks(), cfg.checkWait()), window: cfg.Window(o.Run), drain: o.Drain, seller: o.Seller}
	g.parts = *g.priceParts(req)
	for env, price := range cfg.Prices {
		req, err := cfg.requirements(price)
		if err != nil {
			return nil, fmt.Errorf("environments.%s.price: %w", env, err)
		}
		g.priced[env] = g.priceParts(req)
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.drain <= 0 {
		g.drain = cfg.settleTimeout() + 2*ledgerWriteTimeout
	}
	return g, nil
}

// NewGate builds the gate of cfg for runs bounded by run: it validates cfg, opens the ledger, builds
// the settler (facilitator or onchain), and resolves the payments a crash
// left reserved or settling (see Ledger.Recover). Close releases what it
// opened. Options add to it: WithRetries keeps paid answers for their
// retries.
func NewGate(ctx context.Context, cfg Config, run RunBounds, log *slog.Logger, opts ...GateOption) (*Gate, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(run); err != nil {
		return nil, err
	}
	req, err := cfg.Requirements()
	if err != nil {
		return nil, err
	}
	led, err := ledger.Open(ctx, cfg.ledgerConfig())
	if err != nil {
		return nil, err
	}
	closers := []io.Closer{led}
	fail := func(err error) (*Gate, error) {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i].Close()
		}
		return nil, err
	}
	settler, closer, err := newSettler(ctx, cfg, req, log)
	if err != nil {
		return fail(err)
	}
	if closer != nil {
		closers = append(closers, closer)
	}
	var o gateOptions
	for _, opt := range opts {
		opt(&o)
	}
	keep, err := o.keeping(cfg, run, led, log)
	if err != nil {
		return fail(err)
	}
	var g *Gate
	admit := func(ctx context.Context) (func(), error) {
		release, err := g.checks.Admit(ctx)
		return release, checksBusy(err)
	}
	channelOffer, err := offerChannels(ctx, cfg, req, settler, led, channelWiring{admit: admit, window: cfg.Window(run),
		wait: run.QueueWait, keep: keep}, log)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, channelOffer)
	g, err = newGate(cfg, options{Settler: settler, Ledger: led, Log: log, Run: run, Seller: channelOffer.seller,
		Keeping: keep})
	if err != nil {
		return fail(err)
	}
	g.sql = led
	rep, err := Recover(ctx, led, settler, log)
	if err != nil {
		return fail(err)
	}
	// Closed in reverse: the answers' sweeper, the resolver, the
	// keep-alive, then the settler and the ledger under them.
	g.closers = append(closers, startKeepAlive(led, cfg.lease(), settler, log), g.startResolver(resolveEvery))
	if keep.On() {
		g.closers = append(g.closers, keep.Keeper.Start())
	}
	log.Info("gate ready", "window", g.window, "network", req.Network, "asset", req.Asset, "price", g.priceText(),
		"pay_to", req.PayTo, "settlement", cfg.Settlement, "ledger", ledger.Redact(cfg.Ledger), "replica", led.Replica(),
		"recovered_settled", rep.Settled, "recovered_released", rep.Released, "recovered_failed", rep.Failed,
		"left_settling", rep.Left, "retries", keep.On())
	return g, nil
}

// newSettler builds the settler cfg names; the closer, if any, releases its
// connection.
func newSettler(ctx context.Context, cfg Config, req x402.Requirements, log *slog.Logger) (Settler, io.Closer, error) {
	switch cfg.Settlement {
	case SettleFacilitator:
		return newFacilitatorSettler(facilitatorConfig{
			URL: cfg.FacilitatorURL, VerifyTimeout: cfg.verifyTimeout(), SettleTimeout: cfg.settleTimeout(),
		}), nil, nil
	case SettleOnchain:
		s, err := chain.Dial(ctx, cfg.RelayerKeyFile, req, cfg.chainConfig(log))
		if err != nil {
			return nil, nil, err
		}
		return s, s, nil
	}
	return nil, nil, fmt.Errorf("payments.settlement: %q is not one of facilitator, onchain", cfg.Settlement)
}

// Close waits for the settlements in flight (up to the drain bound: a
// settlement cut off by closing the ledger or the chain client under it
// would leave a payment collected and unrecorded), refuses new
// reservations, stops the pending resolver, then closes the ledger and the
// chain connection NewGate opened.
func (g *Gate) Close() error {
	if left := g.charges.close(g.drain); left > 0 {
		g.log.Error("settlements still in flight after the drain bound; closing under them, "+
			"Recover resolves their rows at the next start", "in_flight", left, "drain", g.drain)
	}
	var errs []error
	for i := len(g.closers) - 1; i >= 0; i-- {
		errs = append(errs, g.closers[i].Close())
	}
	g.closers = nil
	return errors.Join(errs...)
}

// Requirements returns the terms entry the gate quotes for a call in an
// environment that sets no price of its own.
func (g *Gate) Requirements() x402.Requirements { return g.req }

// RequirementsFor returns the terms entry the gate quotes for a call in
// the environment ("" is the default one).
func (g *Gate) RequirementsFor(environment string) x402.Requirements {
	return g.partsFor(environment).req
}
