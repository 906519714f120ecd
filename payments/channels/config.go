package channels

import (
	"fmt"
	"time"

	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// Defaults of Config (docs/design/channels.md §4.9).
const (
	// DefaultWithdrawDelay is the quoted withdrawDelay: longer than the
	// official 900 s so that an hour of RPC trouble still lets claims
	// land before a payer's withdrawal can finalize.
	DefaultWithdrawDelay = time.Hour
	// DefaultMirrorEvery is how often the mirror rereads the escrow.
	DefaultMirrorEvery = 15 * time.Second
	// DefaultClaimEvery is how often the claimer claims what was charged.
	DefaultClaimEvery = 10 * time.Minute
	// DefaultClaimThreshold is the unclaimed total, in asset units, that
	// starts a claim pass at once.
	DefaultClaimThreshold = "1"
	// DefaultMaxClaimsPerTx bounds the channels of one claim transaction.
	DefaultMaxClaimsPerTx = 100
	// minDepositMultiple is the official server's default minDeposit hint,
	// in prices.
	minDepositMultiple = 10
)

// Config is the payments.channels section.
type Config struct {
	// Enabled is payments.channels.enabled: offer batch-settlement when a
	// receiver authorizer and payments.rpc_url exist.
	Enabled bool `mapstructure:"enabled"`
	// WithdrawDelay is payments.channels.withdraw_delay (15m..720h).
	WithdrawDelay time.Duration `mapstructure:"withdraw_delay"`
	// MinDeposit is payments.channels.min_deposit, the minDeposit hint in
	// asset units; "" means 10 prices (never below one price).
	MinDeposit string `mapstructure:"min_deposit"`
	// AuthorizerKeyFile is payments.channels.authorizer_key_file: the
	// operator's receiver-authorizer key under settlement: facilitator.
	AuthorizerKeyFile string `mapstructure:"authorizer_key_file"`
	// MirrorEvery is payments.channels.mirror_every.
	MirrorEvery time.Duration `mapstructure:"mirror_every"`
	// ClaimEvery is payments.channels.claim_every.
	ClaimEvery time.Duration `mapstructure:"claim_every"`
	// ClaimThreshold is payments.channels.claim_threshold, asset units.
	ClaimThreshold string `mapstructure:"claim_threshold"`
	// MaxClaimsPerTx is payments.channels.max_claims_per_tx (1..500).
	MaxClaimsPerTx int `mapstructure:"max_claims_per_tx"`
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.WithdrawDelay == 0 {
		c.WithdrawDelay = DefaultWithdrawDelay
	}
	if c.MirrorEvery == 0 {
		c.MirrorEvery = DefaultMirrorEvery
	}
	if c.ClaimEvery == 0 {
		c.ClaimEvery = DefaultClaimEvery
	}
	if c.ClaimThreshold == "" {
		c.ClaimThreshold = DefaultClaimThreshold
	}
	if c.MaxClaimsPerTx == 0 {
		c.MaxClaimsPerTx = DefaultMaxClaimsPerTx
	}
	return c
}

// Validate checks c (after WithDefaults); bad is called with the key (under
// payments.channels) and what is wrong with it.
func (c Config) Validate(bad func(key, format string, args ...any)) {
	delay := c.WithdrawDelay
	if delay%time.Second != 0 || delay < channel.MinWithdrawDelay*time.Second || delay > channel.MaxWithdrawDelay*time.Second {
		bad("withdraw_delay", "%s is not a whole number of seconds within 15m..720h (the escrow's range)", delay)
	}
	if c.MinDeposit != "" {
		if _, err := x402.ParsePrice(c.MinDeposit); err != nil {
			bad("min_deposit", "%q is not an amount in asset units: %v", c.MinDeposit, err)
		}
	}
	if c.MirrorEvery < time.Second || c.MirrorEvery > delay/10 {
		bad("mirror_every", "%s is not within 1s..withdraw_delay/10 (%s): a withdrawal must be seen long before it can finalize",
			c.MirrorEvery, delay/10)
	}
	if c.ClaimEvery < time.Second || c.ClaimEvery > delay/2 {
		bad("claim_every", "%s is not within 1s..withdraw_delay/2 (%s)", c.ClaimEvery, delay/2)
	}
	if _, err := x402.ParsePrice(c.ClaimThreshold); err != nil {
		bad("claim_threshold", "%q is not an amount in asset units: %v", c.ClaimThreshold, err)
	}
	if c.MaxClaimsPerTx < 1 || c.MaxClaimsPerTx > 500 {
		bad("max_claims_per_tx", "%d is not within 1..500", c.MaxClaimsPerTx)
	}
}

// MirrorMaxAge is how old a channel's mirror may be when a voucher is
// taken: a third of the withdraw delay, within 30 s..5 min (the official
// server's state TTL), so a withdrawal is seen long before it finalizes.
func (c Config) MirrorMaxAge() time.Duration {
	return min(max(c.WithdrawDelay/3, 30*time.Second), 5*time.Minute)
}

// String is c for the start-up log.
func (c Config) String() string {
	return fmt.Sprintf("withdraw_delay=%s mirror_every=%s claim_every=%s", c.WithdrawDelay, c.MirrorEvery, c.ClaimEvery)
}
