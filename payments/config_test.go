package payments

import (
	"context"
	"encoding/hex"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

func TestParsePrice(t *testing.T) {
	good := map[string]string{"0.005": "5000", "1": "1000000", "1.5": "1500000", "0.000001": "1", "12.345678": "12345678", "007": "7000000"}
	for in, want := range good {
		got, err := x402.ParsePrice(in)
		if err != nil || got.String() != want {
			t.Errorf("ParsePrice(%q) = %v, %v; want %s", in, got, err, want)
		}
		if back, _ := x402.ParsePrice(x402.FormatPrice(got)); back.Cmp(got) != 0 {
			t.Errorf("FormatPrice(%s) = %q does not parse back", got, x402.FormatPrice(got))
		}
	}
	for _, in := range []string{"", "0", "0.000000", "-1", "+1", "1e3", "0.0000001", ".5", "5.", "1,5", "abc", "1.2.3", "0x10"} {
		if got, err := x402.ParsePrice(in); err == nil {
			t.Errorf("ParsePrice(%q) = %v, want an error", in, got)
		}
	}
	if got := x402.FormatPrice(mustPrice(t, "0.005")); got != "0.005" {
		t.Errorf("FormatPrice = %q", got)
	}
}

func mustPrice(t *testing.T, s string) *big.Int {
	t.Helper()
	p, err := x402.ParsePrice(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigValidate(t *testing.T) {
	if err := testConfig(t).Validate(RunBounds{}); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	tests := []struct {
		key    string
		change func(*Config, *RunBounds)
	}{
		{"payments.network", func(c *Config, r *RunBounds) { c.Network = "solana:1" }},
		{"payments.asset", func(c *Config, r *RunBounds) { c.Asset = "USDC" }},
		{"payments.asset_name", func(c *Config, r *RunBounds) { c.AssetName = " " }},
		{"payments.asset_version", func(c *Config, r *RunBounds) { c.AssetVersion = "" }},
		{"payments.price", func(c *Config, r *RunBounds) { c.Price = "0.0000001" }},
		{"payments.price", func(c *Config, r *RunBounds) { c.Price = "0" }},
		{"payments.pay_to", func(c *Config, r *RunBounds) { c.PayTo = "" }},
		{"payments.pay_to", func(c *Config, r *RunBounds) { c.PayTo = "0x0000000000000000000000000000000000000000" }},
		{"payments.pay_to", func(c *Config, r *RunBounds) { c.PayTo = "0x123" }},
		{"payments.max_timeout_seconds", func(c *Config, r *RunBounds) { c.MaxTimeoutSeconds = 5 }},
		{"payments.settlement", func(c *Config, r *RunBounds) { c.Settlement = "magic" }},
		{"payments.facilitator_url", func(c *Config, r *RunBounds) { c.FacilitatorURL = "x402.org" }},
		{"payments.rpc_url", func(c *Config, r *RunBounds) { c.Settlement = SettleOnchain; c.RelayerKeyFile = "k" }},
		{"payments.relayer_key_file", func(c *Config, r *RunBounds) { c.Settlement = SettleOnchain; c.RPCURL = "http://localhost:8545" }},
		{"payments.ledger", func(c *Config, r *RunBounds) { c.Ledger = "" }},
		{"payments.verify_timeout", func(c *Config, r *RunBounds) { c.VerifyTimeout = -time.Second }},
		{"payments.settle_timeout", func(c *Config, r *RunBounds) { c.SettleTimeout = -time.Second }},
		{"payments.rpc_timeout", func(c *Config, r *RunBounds) { c.RPCTimeout = -time.Second }},
		{"payments.max_checks", func(c *Config, r *RunBounds) { c.MaxChecks = -1 }},
		{"payments.check_wait", func(c *Config, r *RunBounds) { c.CheckWait = time.Hour }},
		// The validity window: 3 + 10 + 2 + 5 + 60 + 10 s = 90 s.
		{"payments.max_timeout_seconds", func(c *Config, r *RunBounds) {
			r.QueueWait, r.Limit, c.MaxTimeoutSeconds = 2*time.Second, 5*time.Second, 89
		}},
		{"payments.max_timeout_seconds", func(c *Config, r *RunBounds) { r.Limit = 5 * time.Minute }},
		{"payments.max_timeout_seconds", func(c *Config, r *RunBounds) { c.SettleTimeout = 2 * time.Minute }},
	}
	for _, tt := range tests {
		c, run := testConfig(t), RunBounds{}
		tt.change(&c, &run)
		err := c.Validate(run)
		if err == nil || !strings.HasPrefix(err.Error(), tt.key+": ") {
			t.Errorf("%s: Validate = %v, want a message starting with the key", tt.key, err)
		}
	}
	c := testConfig(t)
	run := RunBounds{QueueWait: 2 * time.Second, Limit: 5 * time.Second}
	c.MaxTimeoutSeconds = 90
	if err := c.Validate(run); err != nil || c.Window(run) != 90*time.Second {
		t.Fatalf("a window of exactly max_timeout_seconds: %v, window %s", err, c.Window(run))
	}
	c.MaxTimeoutSeconds = 89
	if err := c.Validate(run); err == nil || !strings.Contains(err.Error(), "runtime.timeout and its overhead (5s)") || !strings.Contains(err.Error(), "at least 90") {
		t.Fatalf("the message names the keys and the bound: %v", err)
	}
	c = testConfig(t)
	c.Network = "base-sepolia"
	if err := c.Validate(RunBounds{}); err != nil {
		t.Fatalf("v1 network name: %v", err)
	}
	if req, _ := c.Requirements(); req.Network != "eip155:84532" {
		t.Fatalf("network %q, want the CAIP-2 id", req.Network)
	}
}

func TestNewGateOnchainErrors(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	cfg.Settlement, cfg.RPCURL = SettleOnchain, "http://127.0.0.1:1"
	cfg.RelayerKeyFile = filepath.Join(t.TempDir(), "missing.key")
	if _, err := NewGate(ctx, cfg, RunBounds{}, nil); err == nil || !strings.Contains(err.Error(), "payments.relayer_key_file") {
		t.Fatalf("missing key file: %v", err)
	}
	key := x402test.Key(t)
	if err := os.WriteFile(cfg.RelayerKeyFile, []byte("0x"+hex.EncodeToString(crypto.FromECDSA(key))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := x402.LoadKey(cfg.RelayerKeyFile)
	if err != nil || !loaded.Equal(key) {
		t.Fatalf("LoadKey = %v", err)
	}
	cfg.VerifyTimeout = time.Second
	_, err = NewGate(ctx, cfg, RunBounds{}, nil)
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(sandboxd.ErrorMessage(err), "payments.rpc_url") {
		t.Fatalf("unreachable RPC: %v", err)
	}
	if _, err := x402.ParseKey("not a key"); err == nil {
		t.Fatal("ParseKey accepted garbage")
	}
}
