package main

import (
	"log/slog"
	"time"

	"sandboxd/internal/configcheck"
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
	p := configcheck.Problems{Prefix: "config: payments.retries."}
	c.retriesConfig().Validate(c.maxTimeout(), p.Bad)
	return p.Errs()
}

// gateRetries is the gate's option that keeps paid answers for their
// payers' retries (payments.WithRetries: the gate builds the keeper on its
// ledger and runs its sweeper until it closes), with the metrics'
// observer; none when retries are off.
func gateRetries(cfg Config, m *metrics.Metrics, log *slog.Logger) []payments.GateOption {
	if !cfg.retriesOn() {
		return nil
	}
	rc := cfg.retriesConfig()
	log.Info("answers kept for retries", "keep", rc.Keep, "wait", rc.Wait,
		"max_answer_bytes", int64(rc.MaxAnswerBytes), "max_bytes", int64(rc.MaxBytes))
	return []payments.GateOption{payments.WithRetries(rc, retries.Options{Observer: m.Retries()})}
}
