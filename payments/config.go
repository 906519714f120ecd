package payments

import (
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/internal/configcheck"
	"sandboxd/payments/chain"
	"sandboxd/payments/channels"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
)

// The settlement modes.
const (
	// SettleFacilitator verifies and settles through an x402 facilitator.
	SettleFacilitator = "facilitator"
	// SettleOnchain settles directly on chain with the operator's relayer key.
	SettleOnchain = "onchain"
)

// Defaults for the optional fields of Config.
const (
	// DefaultVerifyTimeout bounds a facilitator /verify or an on-chain check.
	DefaultVerifyTimeout = 10 * time.Second
	// DefaultSettleTimeout bounds a settlement, up to its receipt.
	DefaultSettleTimeout = 60 * time.Second
	// DefaultRPCTimeout bounds each JSON-RPC call to the chain.
	DefaultRPCTimeout = 10 * time.Second
	// DefaultMaxChecks bounds the remote checks of payments at once. A
	// check holds a goroutine and a connection, no sandbox: the bound is
	// there to cap what a flood pushes at the facilitator or the RPC node.
	DefaultMaxChecks = 64
	// DefaultCheckWait is how long a payment waits for a check slot.
	DefaultCheckWait = 3 * time.Second
	// windowMargin is added to the validity window a payment needs, for
	// what the named bounds do not cover: ledger writes, clock skew
	// between this host and the chain.
	windowMargin = 10 * time.Second
	// description describes the paid resource in the terms.
	description = "Run a short Python program"
)

// Config is the payments section of the service's configuration:
// cmd/sandboxd decodes the payments.* keys straight into it (the
// mapstructure tags name the keys; this package never sees viper). The
// fields tagged "-" are not keys: cmd/sandboxd sets them.
type Config struct {
	// Network is payments.network: a CAIP-2 id ("eip155:84532") or a v1 name
	// ("base-sepolia").
	Network string `mapstructure:"network"`
	// Asset is payments.asset: the token contract's address.
	Asset string `mapstructure:"asset"`
	// AssetName and AssetVersion are payments.asset_name and
	// payments.asset_version: the token's EIP-712 domain.
	AssetName    string `mapstructure:"asset_name"`
	AssetVersion string `mapstructure:"asset_version"`
	// Price is payments.price: the price per call in asset units ("0.005"),
	// of an environment that sets none of its own.
	Price string `mapstructure:"price"`
	// Prices are the prices of the environments that set their own
	// (environments.<name>.price), by environment name; cmd/sandboxd sets
	// them. A request for an environment not here pays Price.
	Prices map[string]string `mapstructure:"-"`
	// PayTo is payments.pay_to: the address paid.
	PayTo string `mapstructure:"pay_to"`
	// MaxTimeoutSeconds is payments.max_timeout_seconds.
	MaxTimeoutSeconds int `mapstructure:"max_timeout_seconds"`
	// Settlement is payments.settlement: SettleFacilitator or SettleOnchain.
	Settlement string `mapstructure:"settlement"`
	// FacilitatorURL is payments.facilitator_url.
	FacilitatorURL string `mapstructure:"facilitator_url"`
	// RPCURL is payments.rpc_url, the JSON-RPC endpoint for onchain.
	RPCURL string `mapstructure:"rpc_url"`
	// RelayerKeyFile is payments.relayer_key_file: a file holding the hex
	// private key that pays gas for onchain settlement.
	RelayerKeyFile string `mapstructure:"relayer_key_file"`
	// Ledger is payments.ledger: the SQLite file of the payment ledger, or
	// the postgres:// URL of a ledger shared by many replicas.
	Ledger string `mapstructure:"ledger"`
	// ReplicaID is payments.replica_id, recorded on every row this process
	// reserves; empty means ledger.DefaultReplica("").
	ReplicaID string `mapstructure:"replica_id"`
	// Lease is payments.lease: how long a replica may be silent before
	// another resolves its open rows; zero means ledger.DefaultLease.
	Lease time.Duration `mapstructure:"lease"`
	// LedgerObserver, when set, is told how long each ledger write took.
	LedgerObserver func(op string, d time.Duration) `mapstructure:"-"`
	// ChannelObserver, when set, is told how each channel payment, deposit,
	// refund, claim and sweep ended (channels.Observer).
	ChannelObserver channels.Observer `mapstructure:"-"`
	// ChannelGauges, when set, is told the channels' unclaimed total and
	// mirror age after each pass of their background (channels.Gauges).
	ChannelGauges channels.Gauges `mapstructure:"-"`
	// VerifyTimeout bounds a facilitator /verify or an on-chain check; zero
	// means DefaultVerifyTimeout.
	VerifyTimeout time.Duration `mapstructure:"verify_timeout"`
	// SettleTimeout bounds a settlement; zero means DefaultSettleTimeout.
	SettleTimeout time.Duration `mapstructure:"settle_timeout"`
	// RPCTimeout is payments.rpc_timeout: it bounds each JSON-RPC call to
	// the chain (onchain), inside the two bounds above; zero means
	// DefaultRPCTimeout.
	RPCTimeout time.Duration `mapstructure:"rpc_timeout"`
	// MaxChecks is payments.max_checks: how many payments may be checked
	// remotely (facilitator /verify, chain reads) at once; zero means
	// DefaultMaxChecks. Checks hold no sandbox slot.
	MaxChecks int `mapstructure:"max_checks"`
	// CheckWait is payments.check_wait: how long a payment waits for a
	// check slot before the request is answered 429; zero means
	// DefaultCheckWait.
	CheckWait time.Duration `mapstructure:"check_wait"`
	// Channels is payments.channels: batch-settlement channels, offered
	// beside exact (docs/payments.md, "Channels").
	Channels channels.Config `mapstructure:"channels"`
}

// RunBounds is what bounds a paid run, from the runtime's configuration:
// a paid request may wait QueueWait for a sandbox and then run up to Limit
// before it settles. They enter the validity window (Config.Window) and
// the request's budget (Config.RequestBudget).
type RunBounds struct {
	// QueueWait is runtime.queue_wait.
	QueueWait time.Duration
	// Limit is the longest a run may take before it is abandoned:
	// runtime.timeout plus the run's own overhead (cmd/sandboxd's
	// runLimit, the bound of the detached run).
	Limit time.Duration
}

// Window is the validity a payment must have left when it is checked: the
// longest the service can take from the check to a settlement on chain,
// flow plus a margin,
//
//	check_wait + verify_timeout + runtime.queue_wait + run limit + settle_timeout + 10 s
//
// (the run limit is what bounds a run: runtime.timeout plus its overhead;
// the settlement budget is payments.settle_timeout, the longest Settle
// waits for its receipt; the margin covers ledger writes and clock skew
// between this host and the chain). An authorization whose validBefore
// comes sooner could expire while it runs or settles: the run would be
// free, or the relayer's transaction would revert at its own cost.
func (c Config) Window(run RunBounds) time.Duration {
	return c.flow(run) + windowMargin
}

// flow is the longest a paid request can take from its payment's check to
// its settlement's receipt: a wait for a check slot and the remote check,
// the wait for a sandbox, the run up to its limit, and the settlement. The
// one sum that Window and RequestBudget are derived from.
func (c Config) flow(run RunBounds) time.Duration {
	return c.checkWait() + c.verifyTimeout() + run.QueueWait + run.Limit + c.settleTimeout()
}

// Validate checks every field, and the validity window that run needs
// against max_timeout_seconds, and returns one error listing each
// problem, each line naming its config key.
func (c Config) Validate(run RunBounds) error {
	p := configcheck.Problems{Prefix: "payments."}
	bad := p.Bad
	c.validateTerms(bad)
	c.validateSettlement(bad)
	c.validateLedger(bad)
	c.validateBounds(bad)
	c.validateWindow(run, bad)
	c.Channels.WithDefaults().Validate(func(key, format string, args ...any) { bad("channels."+key, format, args...) })
	for _, env := range slices.Sorted(maps.Keys(c.Prices)) {
		if _, err := x402.ParsePrice(c.Prices[env]); err != nil {
			p.Add(fmt.Errorf("environments.%s.price: %w", env, err))
		}
	}
	return p.Err()
}

// badKey records a problem with the key payments.<key>.
type badKey func(key, format string, args ...any)

// validateTerms checks the keys of the terms quoted: the network, the
// token, the price, the payee and the authorization's validity.
func (c Config) validateTerms(bad badKey) {
	if _, err := x402.ChainID(c.Network); err != nil {
		bad("network", "%v", err)
	}
	if !isAddress(c.Asset) {
		bad("asset", "%q is not a 0x-prefixed token address", c.Asset)
	}
	if strings.TrimSpace(c.AssetName) == "" {
		bad("asset_name", "is empty; set the token's EIP-712 name (\"USDC\" on Base Sepolia, \"USD Coin\" on Base)")
	}
	if strings.TrimSpace(c.AssetVersion) == "" {
		bad("asset_version", "is empty; set the token's EIP-712 version (\"2\" for USDC)")
	}
	if _, err := x402.ParsePrice(c.Price); err != nil {
		bad("price", "%v", err)
	}
	switch {
	case c.PayTo == "":
		bad("pay_to", "is empty; set the address that receives payments")
	case !isAddress(c.PayTo) || common.HexToAddress(c.PayTo) == (common.Address{}):
		bad("pay_to", "%q is not a non-zero 0x-prefixed address", c.PayTo)
	}
	if c.MaxTimeoutSeconds < 10 || c.MaxTimeoutSeconds > 3600 {
		bad("max_timeout_seconds", "%d is out of range (10 to 3600)", c.MaxTimeoutSeconds)
	}
}

// validateSettlement checks the settlement mode and what it needs.
func (c Config) validateSettlement(bad badKey) {
	switch c.Settlement {
	case SettleFacilitator:
		if u, err := url.Parse(c.FacilitatorURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("facilitator_url", "%q is not an http(s) URL", c.FacilitatorURL)
		}
	case SettleOnchain:
		if u, err := url.Parse(c.RPCURL); err != nil || u.Scheme == "" {
			bad("rpc_url", "%s is not a JSON-RPC URL (http, https, ws, wss or an IPC path)", chain.RedactURL(c.RPCURL))
		}
		if c.RelayerKeyFile == "" {
			bad("relayer_key_file", "is empty; onchain settlement needs a file with the hex key that pays gas")
		}
	default:
		bad("settlement", "%q is not one of facilitator, onchain", c.Settlement)
	}
}

// validateLedger checks the ledger's location and lease.
func (c Config) validateLedger(bad badKey) {
	if err := ledger.Validate(c.Ledger); err != nil {
		bad("ledger", "%v", err)
	}
	if c.Lease < 0 || (c.Lease > 0 && c.Lease < 3*time.Second) {
		bad("lease", "%s is out of range (at least 3s; 0 means %s)", c.Lease, ledger.DefaultLease)
	}
}

// validateBounds checks the timeouts and the bound on remote checks.
func (c Config) validateBounds(bad badKey) {
	if c.VerifyTimeout < 0 {
		bad("verify_timeout", "%s is negative", c.VerifyTimeout)
	}
	if c.SettleTimeout < 0 {
		bad("settle_timeout", "%s is negative", c.SettleTimeout)
	}
	if c.RPCTimeout < 0 {
		bad("rpc_timeout", "%s is negative", c.RPCTimeout)
	}
	if c.MaxChecks < 0 || c.MaxChecks > 4096 {
		bad("max_checks", "%d is out of range (1 to 4096)", c.MaxChecks)
	}
	if c.CheckWait < 0 || c.CheckWait > time.Minute {
		bad("check_wait", "%s is out of range (0s, the default of 3s, to 60s)", c.CheckWait)
	}
}

// validateWindow checks that max_timeout_seconds covers the validity
// window a payment needs (Window).
func (c Config) validateWindow(run RunBounds, bad badKey) {
	if w := c.Window(run); c.MaxTimeoutSeconds >= 10 && time.Duration(c.MaxTimeoutSeconds)*time.Second < w {
		bad("max_timeout_seconds", "%d s cannot cover the validity window a payment needs, %s = payments.check_wait (%s) + "+
			"payments.verify_timeout (%s) + runtime.queue_wait (%s) + the run limit, runtime.timeout and its overhead (%s) + "+
			"payments.settle_timeout (%s) + %s margin; raise it to at least %d or lower those (the run limit counts the longest "+
			"environments.<name>.timeout, when one is longer than runtime.timeout)", c.MaxTimeoutSeconds, w,
			c.checkWait(), c.verifyTimeout(), run.QueueWait, run.Limit, c.settleTimeout(), windowMargin, int((w+time.Second-1)/time.Second))
	}
}

// Requirements returns the v2 terms entry the configuration quotes for an
// environment that sets no price of its own. It assumes Validate passed.
func (c Config) Requirements() (x402.Requirements, error) {
	return c.requirements(c.Price)
}

// requirements returns the v2 terms entry for a call at price.
func (c Config) requirements(text string) (x402.Requirements, error) {
	price, err := x402.ParsePrice(text)
	if err != nil {
		return x402.Requirements{}, fmt.Errorf("payments.price: %w", err)
	}
	return x402.Requirements{
		Scheme:            x402.SchemeExact,
		Network:           x402.CanonicalNetwork(c.Network),
		Amount:            price.String(),
		Asset:             common.HexToAddress(c.Asset).Hex(),
		PayTo:             common.HexToAddress(c.PayTo).Hex(),
		MaxTimeoutSeconds: c.MaxTimeoutSeconds,
		Extra:             x402.Extra{Name: c.AssetName, Version: c.AssetVersion},
	}, nil
}

func (c Config) verifyTimeout() time.Duration {
	if c.VerifyTimeout > 0 {
		return c.VerifyTimeout
	}
	return DefaultVerifyTimeout
}

func (c Config) settleTimeout() time.Duration {
	if c.SettleTimeout > 0 {
		return c.SettleTimeout
	}
	return DefaultSettleTimeout
}

// RequestBudget is the longest a paid request can take once its body is
// read: the flow (check, queue, run, settlement) and the ledger writes
// around it. The HTTP write deadline covers it.
func (c Config) RequestBudget(run RunBounds) time.Duration {
	return c.flow(run) + 3*ledgerWriteTimeout
}

func (c Config) checkWait() time.Duration {
	if c.CheckWait > 0 {
		return c.CheckWait
	}
	return DefaultCheckWait
}

func (c Config) maxChecks() int {
	if c.MaxChecks > 0 {
		return c.MaxChecks
	}
	return DefaultMaxChecks
}

func (c Config) rpcTimeout() time.Duration {
	if c.RPCTimeout > 0 {
		return c.RPCTimeout
	}
	return DefaultRPCTimeout
}

func (c Config) lease() time.Duration {
	if c.Lease > 0 {
		return c.Lease
	}
	return ledger.DefaultLease
}

// ledgerConfig is the ledger part of c.
func (c Config) ledgerConfig() ledger.Config {
	return ledger.Config{Ledger: c.Ledger, Replica: c.ReplicaID, Lease: c.lease(), Observe: c.LedgerObserver}
}

// chainConfig is the on-chain settler's part of c.
func (c Config) chainConfig(log *slog.Logger) chain.Config {
	return chain.Config{Endpoint: c.RPCURL, CheckTimeout: c.verifyTimeout(), SettleTimeout: c.settleTimeout(),
		RPCTimeout: c.rpcTimeout(), Log: log}
}

func isAddress(s string) bool {
	return (strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X")) && common.IsHexAddress(s)
}
