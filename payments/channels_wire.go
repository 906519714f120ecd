package payments

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"sandboxd/payments/channels"
	"sandboxd/payments/internal/answer"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
)

// offer is what NewGate needs to offer channels: the seller, its
// background (the mirror and the claimer) and what to close. A nil seller
// means channels are not offered.
type offer struct {
	seller     *channels.Seller
	background *channels.Background
	closer     io.Closer
}

// Close stops the background and releases the escrow client.
func (o offer) Close() error {
	if o.background != nil {
		o.background.Close()
	}
	if o.closer != nil {
		return o.closer.Close()
	}
	return nil
}

// channelWiring is what the gate hands its seller: admit bounds the
// seller's remote checks; window is the payment window a reservation is
// held for; wait how long a voucher waits for a concurrent call's hold;
// keep keeps the paid answers.
type channelWiring struct {
	admit  func(context.Context) (func(), error)
	window time.Duration
	wait   time.Duration
	keep   answer.Keeping
}

// offerChannels builds the channels of cfg on led (docs/design/channels.md
// §4.9): offered when enabled, with payments.rpc_url, the escrow deployed
// on the chain and a receiver authorizer (the relayer under onchain; under
// facilitator the operator's key file, else the one the facilitator
// advertises). Otherwise it logs why not and returns no seller: exact is
// offered alone.
func offerChannels(ctx context.Context, cfg Config, req x402.Requirements, settler Settler, led *ledger.SQL,
	w channelWiring, log *slog.Logger) (offer, error) {
	var none offer
	notOffered := func(why string, args ...any) (offer, error) {
		log.Info("channels not offered", "why", fmt.Sprintf(why, args...))
		return none, nil
	}
	if why := channelsOff(cfg); why != "" {
		return notOffered("%s", why)
	}
	parts, err := channelPartsOf(ctx, cfg, req, settler, log)
	if err != nil || parts.escrow == nil {
		if parts.closer != nil {
			parts.closer.Close()
		}
		if err != nil {
			log.Error("channels not offered", "why", sandboxdMessage(err), "err", err)
			return none, nil
		}
		return notOffered("%s", parts.why)
	}
	if n, err := led.ClearHolds(ctx); err != nil {
		parts.closer.Close()
		return none, err
	} else if n > 0 {
		log.Info("channel holds of this replica cleared at start: nothing was charged for them", "holds", n)
	}
	seller, err := channels.New(channels.Options{Store: led, Reader: parts.escrow, Depositor: parts.depositor,
		Refunder: parts.refunder, Refunds: led, Config: cfg.Channels, Authorizer: parts.authorizer, Network: req.Network,
		Admit: w.admit, HoldFor: w.window, Wait: w.wait, Observe: cfg.ChannelObserver, Keeping: w.keep, Log: log})
	if err != nil {
		parts.closer.Close()
		return none, err
	}
	bg := parts.background(cfg, req, led, log)
	bg.Start()
	logChannels(log, parts, cfg)
	return offer{seller: seller, background: bg, closer: parts.closer}, nil
}

// channelsOff says why cfg offers no channels whatever the chain holds, or
// "" when it may.
func channelsOff(cfg Config) string {
	switch {
	case !cfg.Channels.Enabled:
		return "payments.channels.enabled is false"
	case cfg.RPCURL == "":
		return "payments.rpc_url is not set: a voucher is checked against the escrow's state, read from the chain"
	}
	return ""
}
