package payments

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
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
	// DefaultDescription describes the paid resource in the terms.
	DefaultDescription = "Run a short Python program"
)

// Config is the payments section of the service's configuration, copied
// into plain fields by cmd/ (this package never sees viper). The comments
// name the config keys.
type Config struct {
	// Network is payments.network: a CAIP-2 id ("eip155:84532") or a v1 name
	// ("base-sepolia").
	Network string
	// Asset is payments.asset: the token contract's address.
	Asset string
	// AssetName and AssetVersion are payments.asset_name and
	// payments.asset_version: the token's EIP-712 domain.
	AssetName    string
	AssetVersion string
	// Price is payments.price: the price per call in asset units ("0.005").
	Price string
	// PayTo is payments.pay_to: the address paid.
	PayTo string
	// MaxTimeoutSeconds is payments.max_timeout_seconds.
	MaxTimeoutSeconds int
	// Settlement is payments.settlement: SettleFacilitator or SettleOnchain.
	Settlement string
	// FacilitatorURL is payments.facilitator_url.
	FacilitatorURL string
	// RPCURL is payments.rpc_url, the JSON-RPC endpoint for onchain.
	RPCURL string
	// RelayerKeyFile is payments.relayer_key_file: a file holding the hex
	// private key that pays gas for onchain settlement.
	RelayerKeyFile string
	// Ledger is payments.ledger: the SQLite file of the payment ledger, or
	// the postgres:// URL of a ledger shared by many replicas.
	Ledger string
	// ReplicaID is payments.replica_id, recorded on every row this process
	// reserves; empty means DefaultReplica("").
	ReplicaID string
	// Lease is payments.lease: how long a replica may be silent before
	// another resolves its open rows; zero means DefaultLease.
	Lease time.Duration
	// LedgerObserver, when set, is told how long each ledger write took.
	LedgerObserver func(op string, d time.Duration)
	// Description is the resource description quoted in the terms; empty
	// means DefaultDescription.
	Description string
	// VerifyTimeout bounds a facilitator /verify or an on-chain check; zero
	// means DefaultVerifyTimeout.
	VerifyTimeout time.Duration
	// SettleTimeout bounds a settlement; zero means DefaultSettleTimeout.
	SettleTimeout time.Duration
	// RPCTimeout is payments.rpc_timeout: it bounds each JSON-RPC call to
	// the chain (onchain), inside the two bounds above; zero means
	// DefaultRPCTimeout.
	RPCTimeout time.Duration
}

// Validate checks every field and returns one error listing each problem,
// each line naming its config key.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("payments.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if _, err := ChainID(c.Network); err != nil {
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
	if _, err := ParsePrice(c.Price); err != nil {
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
	switch c.Settlement {
	case SettleFacilitator:
		if u, err := url.Parse(c.FacilitatorURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("facilitator_url", "%q is not an http(s) URL", c.FacilitatorURL)
		}
	case SettleOnchain:
		if u, err := url.Parse(c.RPCURL); err != nil || u.Scheme == "" {
			bad("rpc_url", "%q is not a JSON-RPC URL (http, https, ws, wss or an IPC path)", c.RPCURL)
		}
		if c.RelayerKeyFile == "" {
			bad("relayer_key_file", "is empty; onchain settlement needs a file with the hex key that pays gas")
		}
	default:
		bad("settlement", "%q is not one of facilitator, onchain", c.Settlement)
	}
	if err := validateLedger(c.Ledger); err != nil {
		bad("ledger", "%v", err)
	}
	if c.Lease < 0 || (c.Lease > 0 && c.Lease < 3*time.Second) {
		bad("lease", "%s is out of range (at least 3s; 0 means %s)", c.Lease, DefaultLease)
	}
	if c.VerifyTimeout < 0 {
		bad("verify_timeout", "%s is negative", c.VerifyTimeout)
	}
	if c.SettleTimeout < 0 {
		bad("settle_timeout", "%s is negative", c.SettleTimeout)
	}
	if c.RPCTimeout < 0 {
		bad("rpc_timeout", "%s is negative", c.RPCTimeout)
	}
	return errors.Join(errs...)
}

// Requirements returns the v2 terms entry the configuration quotes. It
// assumes Validate passed.
func (c Config) Requirements() (Requirements, error) {
	price, err := ParsePrice(c.Price)
	if err != nil {
		return Requirements{}, fmt.Errorf("payments.price: %w", err)
	}
	return Requirements{
		Scheme:            SchemeExact,
		Network:           CanonicalNetwork(c.Network),
		Amount:            price.String(),
		Asset:             common.HexToAddress(c.Asset).Hex(),
		PayTo:             common.HexToAddress(c.PayTo).Hex(),
		MaxTimeoutSeconds: c.MaxTimeoutSeconds,
		Extra:             Extra{Name: c.AssetName, Version: c.AssetVersion},
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
	return DefaultLease
}

// ledgerConfig is the ledger part of c.
func (c Config) ledgerConfig() LedgerConfig {
	return LedgerConfig{Ledger: c.Ledger, Replica: c.ReplicaID, Lease: c.lease(), Observe: c.LedgerObserver}
}

func (c Config) description() string {
	if c.Description != "" {
		return c.Description
	}
	return DefaultDescription
}

func isAddress(s string) bool {
	return (strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X")) && common.IsHexAddress(s)
}
