package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"sandboxd/metrics"
	"sandboxd/payments"
	"sandboxd/payments/retries"
)

// maxTimeout is payments.max_timeout_seconds as a duration: the validity
// the terms ask of a payment, which kept answers must outlive.
func (c Config) maxTimeout() time.Duration {
	return time.Duration(c.Payments.MaxTimeoutSeconds) * time.Second
}

// retriesConfig is the payments.retries section with its defaults filled
// in: keep's depends on max_timeout_seconds, so the file's 0 is resolved
// here, where both are known.
func (c Config) retriesConfig() retries.Config {
	return c.Payments.Retries.WithDefaults(c.maxTimeout())
}

// retriesOn reports whether paid answers are kept for retries: payments
// on and payments.retries.enabled.
func (c Config) retriesOn() bool {
	return c.Payments.Enabled && c.Payments.Retries.On()
}

// retriesErrors checks the payments.retries keys (retries.Config.Validate)
// when payments are on, one "config: payments.retries.<key>: ..." each.
func (c Config) retriesErrors() []error {
	if !c.Payments.Enabled {
		return nil
	}
	var errs []error
	c.retriesConfig().Validate(c.maxTimeout(), func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config: payments.retries.%s: %s", key, fmt.Sprintf(format, args...)))
	})
	return errs
}

// gateRetries builds the keeper of the answers kept for retries over the
// gate's ledger and starts its sweeper, when retries are on; the closer
// stops the sweeper (before the gate closes the ledger under it). nil and
// a closer that does nothing when they are off.
func gateRetries(cfg Config, g *payments.Gate, m *metrics.Metrics, log *slog.Logger) (*retries.Keeper, io.Closer) {
	if !cfg.retriesOn() {
		return nil, io.NopCloser(nil)
	}
	rc := cfg.retriesConfig()
	k := retries.New(rc, ledgerAnswers{g.Ledger()}, retries.Options{Log: log, Observer: m.Retries(),
		MaxWaiters: cfg.Payments.MaxChecks})
	// piece 4 hooks the keeper into payments.Gate here
	log.Info("answers kept for retries", "keep", rc.Keep, "wait", rc.Wait,
		"max_answer_bytes", int64(rc.MaxAnswerBytes), "max_bytes", int64(rc.MaxBytes))
	return k, k.Start()
}
