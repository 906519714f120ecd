package payments

import (
	"context"
	"errors"
	"log/slog"

	"sandboxd/internal/every"
	"sandboxd/payments/channels"
	"sandboxd/payments/ledger"
)

// ErrClaimerHeld is returned by ClaimNow when a live replica holds the
// fleet's claimer lease: its next pass serves a claim asked for with
// ledger.SQL.RequestClaim, and a second sender would only race it.
var ErrClaimerHeld = errors.New("payments: a live replica holds the channels' claimer lease")

// ClaimNow runs one claim pass of cfg's channels from outside the service
// (sandboxd ledger claim) with the claimer the service builds (the relayer
// under settlement: onchain, the facilitator's /settle under facilitator):
// it takes the fleet's claimer lease as led's replica, claims what every
// channel was charged beyond what was claimed, sweeps it to pay_to and
// records the pass. led is cfg's ledger, opened (ledger.Open) as the
// replica that claims; its heartbeat is kept while the pass runs. The
// lease stays with that replica until its heartbeat is older than the
// lease; a service then takes it back. ErrClaimerHeld when a live replica
// holds it; an error saying why when cfg offers no channels.
func ClaimNow(ctx context.Context, cfg Config, led *ledger.SQL, log *slog.Logger) (channels.ClaimReport, error) {
	var none channels.ClaimReport
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if why := channelsOff(cfg); why != "" {
		return none, errors.New("channels are not offered: " + why)
	}
	req, err := cfg.Requirements()
	if err != nil {
		return none, err
	}
	settler, closer, err := newSettler(ctx, cfg, req, log)
	if err != nil {
		return none, err
	}
	if closer != nil {
		defer closer.Close()
	}
	parts, err := channelPartsOf(ctx, cfg, req, settler, log)
	if parts.closer != nil {
		defer parts.closer.Close()
	}
	if err != nil {
		return none, err
	}
	if parts.escrow == nil {
		return none, errors.New("channels are not offered: " + parts.why)
	}
	return claimOnce(ctx, led, parts.background(cfg, req, led, log))
}

// claimOnce takes the claimer lease as led's replica and runs one pass of
// bg, beating led's heartbeat meanwhile: a pass waits for its receipts,
// which may take longer than the lease.
func claimOnce(ctx context.Context, led *ledger.SQL, bg *channels.Background) (channels.ClaimReport, error) {
	held, err := led.TakeClaimer(ctx)
	if err != nil {
		return channels.ClaimReport{}, err
	}
	if !held {
		return channels.ClaimReport{}, ErrClaimerHeld
	}
	beat := every.Start(led.Lease()/3, func(ctx context.Context) { _ = led.Heartbeat(ctx) })
	defer beat.Close()
	return bg.ClaimPass(ctx)
}
