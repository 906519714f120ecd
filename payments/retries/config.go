package retries

import (
	"time"

	"sandboxd/internal/units"
)

// Defaults and bounds of Config (docs/design/retries.md §7.2).
const (
	// DefaultKeep is how long an answer is kept after its delivery, when
	// the terms' validity (max_timeout_seconds) is shorter.
	DefaultKeep = 10 * time.Minute
	// DefaultWait is how long a retry waits for a first request still
	// running.
	DefaultWait = 20 * time.Second
	// DefaultMaxAnswerBytes is the biggest answer whose bytes are kept:
	// one answer at the default output and file caps.
	DefaultMaxAnswerBytes = 16 << 20
	// DefaultMaxBytes bounds the bytes of all the answers in the ledger.
	DefaultMaxBytes = 256 << 20

	// keepOver is how much longer than the terms' validity answers are
	// kept at the least, so that an answer outlives every resend of its
	// payment.
	keepOver = time.Minute
	maxKeep  = 24 * time.Hour
	minWait  = time.Second
	maxWait  = time.Minute
	// maxAnswerBytes bounds MaxAnswerBytes: one row of the ledger.
	maxAnswerBytes = 64 << 20
	// maxMaxBytes bounds MaxBytes: what a ledger may hold in answers.
	maxMaxBytes = 64 << 30
)

// Config is the payments.retries section: cmd/sandboxd decodes the keys
// straight into it.
type Config struct {
	// Enabled is payments.retries.enabled: keep answers and advertise the
	// payment-identifier extension. nil (the key absent) means true; see On.
	Enabled *bool `mapstructure:"enabled"`
	// Keep is payments.retries.keep: how long an answer is kept after it
	// was delivered (max_timeout_seconds + 1m .. 24h).
	Keep time.Duration `mapstructure:"keep"`
	// Wait is payments.retries.wait: how long a retry waits for a first
	// request still running (1s..60s).
	Wait time.Duration `mapstructure:"wait"`
	// MaxAnswerBytes is payments.retries.max_answer_bytes: a bigger answer
	// keeps its settlement, not its bytes (up to 64 MiB).
	MaxAnswerBytes units.Bytes `mapstructure:"max_answer_bytes"`
	// MaxBytes is payments.retries.max_bytes: all the answers in the
	// ledger, the fleet's (at least MaxAnswerBytes, up to 64 GiB).
	MaxBytes units.Bytes `mapstructure:"max_bytes"`
}

// On reports whether retries are enabled: Enabled, true when unset.
func (c Config) On() bool { return c.Enabled == nil || *c.Enabled }

// WithDefaults returns c with its zero fields set to the defaults. Keep's
// default is DefaultKeep, or maxTimeout (the terms' max_timeout_seconds)
// plus a minute when that is longer.
func (c Config) WithDefaults(maxTimeout time.Duration) Config {
	if c.Keep == 0 {
		c.Keep = max(DefaultKeep, maxTimeout+keepOver)
	}
	if c.Wait == 0 {
		c.Wait = DefaultWait
	}
	if c.MaxAnswerBytes == 0 {
		c.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	return c
}

// Validate checks c (after WithDefaults) for terms valid for maxTimeout;
// bad is called with the key (under payments.retries) and what is wrong
// with it. A disabled c is not checked: none of its values is used.
func (c Config) Validate(maxTimeout time.Duration, bad func(key, format string, args ...any)) {
	if !c.On() {
		return
	}
	if least := maxTimeout + keepOver; c.Keep < least || c.Keep > maxKeep {
		bad("keep", "%s is outside %s..%s: answers must outlive every resend of a payment, "+
			"valid for max_timeout_seconds (%s), by a minute", c.Keep, least, maxKeep, maxTimeout)
	}
	if c.Wait < minWait || c.Wait > maxWait {
		bad("wait", "%s is outside %s..%s", c.Wait, minWait, maxWait)
	}
	if c.MaxAnswerBytes < 0 || c.MaxAnswerBytes > maxAnswerBytes {
		bad("max_answer_bytes", "%d is outside 0..64 MiB", c.MaxAnswerBytes)
	}
	if c.MaxBytes < c.MaxAnswerBytes || c.MaxBytes > maxMaxBytes {
		bad("max_bytes", "%d is outside max_answer_bytes (%d)..64 GiB: the ledger must hold one answer", c.MaxBytes, c.MaxAnswerBytes)
	}
}
