package payments

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"sandboxd/payments/internal/answer"
	"sandboxd/payments/ledger"
	"sandboxd/payments/retries"
)

// GateOption is an option of NewGate.
type GateOption func(*gateOptions)

// gateOptions are what NewGate's options set.
type gateOptions struct {
	// retries is WithRetries' configuration, nil without it.
	retries     *retries.Config
	retriesOpts retries.Options
}

// WithRetries makes the gate keep every paid answer for its payer's
// retries (payments.retries; docs/design/retries.md) as cfg says. NewGate
// fills cfg's zero fields with their defaults for the terms' validity
// (retries.Config.WithDefaults) and validates it (an error names
// payments.retries.<key>), builds the retries.Keeper on the ledger it
// opens (RetriesStore), hands it to exact and channel payments, starts the
// keeper's sweeper and stops it on Close. o's zero fields are the
// keeper's defaults, but for MaxWaiters, which defaults to
// payments.max_checks, and Log, the gate's. Without this option, or with
// cfg disabled (Enabled false), the gate keeps nothing and behaves as it
// did before retries.
func WithRetries(cfg retries.Config, o retries.Options) GateOption {
	return func(g *gateOptions) { g.retries, g.retriesOpts = &cfg, o }
}

// keeping builds the keeping of answers that opts ask for, on led; the
// zero Keeping when they ask for none.
func (o gateOptions) keeping(cfg Config, run RunBounds, led *ledger.SQL, log *slog.Logger) (answer.Keeping, error) {
	if o.retries == nil || !o.retries.On() {
		return answer.Keeping{}, nil
	}
	validity := time.Duration(cfg.MaxTimeoutSeconds) * time.Second
	rc := o.retries.WithDefaults(validity)
	var errs []error
	rc.Validate(validity, func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("payments.retries.%s: %s", key, fmt.Sprintf(format, args...)))
	})
	if err := errors.Join(errs...); err != nil {
		return answer.Keeping{}, err
	}
	ro := o.retriesOpts
	if ro.MaxWaiters <= 0 {
		ro.MaxWaiters = cfg.maxChecks()
	}
	if ro.Log == nil {
		ro.Log = log
	}
	return answer.Keeping{Keeper: retries.New(rc, RetriesStore(led), ro), Flow: cfg.Window(run)}, nil
}
