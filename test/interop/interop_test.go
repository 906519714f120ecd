// Package interop tests sandboxd against software nobody here wrote: the official x402
// client (@x402/fetch, @x402/evm) and facilitator (@x402/core, @x402/evm) from npm, a
// real local chain (anvil, with a USDC stand-in at the Base Sepolia USDC address) and the
// real Docker engine with the sandbox-python image.
//
// The tests run when SANDBOXD_INTEROP=1 or CI=true, and then fail when anything they
// need is missing (node, test/interop/node_modules from test/interop/setup.sh, Docker, the image);
// otherwise they skip.
package interop

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd/internal/pgtest"
	"sandboxd/internal/servicetest"
	"sandboxd/internal/testenv"
)

// price is $0.005 in USDC atomic units (6 decimals).
const price = 5000

var (
	// interopDir is this directory.
	interopDir string
	// binary is sandboxd built once for all tests.
	binary   string
	prepOnce sync.Once
	prepErr  error
)

// mustInterop skips the test outside interop runs; inside them it builds sandboxd once
// and fails the test when a prerequisite is missing.
func mustInterop(t *testing.T) {
	t.Helper()
	testenv.RequireInterop(t)
	prepOnce.Do(func() { prepErr = prepare() })
	if prepErr != nil {
		t.Fatalf("interop prerequisites: %v", prepErr)
	}
}

func prepare() error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	interopDir = wd
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("node is not on PATH (install Node.js 20+): %w", err)
	}
	if _, err := os.Stat(anvilPath()); err != nil {
		return fmt.Errorf("anvil missing at %s: run test/interop/setup.sh", anvilPath())
	}
	if _, err := os.Stat(filepath.Join(interopDir, "node_modules", "@x402", "fetch")); err != nil {
		return fmt.Errorf("@x402/fetch missing: run test/interop/setup.sh")
	}
	binary, err = servicetest.Binary()
	return err
}

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	servicetest.RemoveBinary()
	os.Exit(code)
}

// TestOnchain runs the scenarios with sandboxd settling on chain itself, its relayer
// being an anvil account.
func TestOnchain(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "onchain", nil)
	runScenarios(t, c, "onchain", env)
}

// TestFacilitator runs the scenarios with sandboxd settling through the official
// facilitator, served by test/interop/facilitator.mjs on the same chain.
func TestFacilitator(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "facilitator", nil)
	runScenarios(t, c, "facilitator", env)
}

// paymentEnv is the payment configuration both modes share.
func paymentEnv(mode []string) []string {
	return append([]string{
		"SANDBOX_PAYMENTS_ENABLED=true",
		"SANDBOX_PAYMENTS_NETWORK=eip155:84532",
		"SANDBOX_PAYMENTS_ASSET=" + usdc,
		"SANDBOX_PAYMENTS_ASSET_NAME=USDC",
		"SANDBOX_PAYMENTS_ASSET_VERSION=2",
		"SANDBOX_PAYMENTS_PRICE=0.005",
		"SANDBOX_PAYMENTS_PAY_TO=" + payee.address,
	}, mode...)
}

// instance labels one service's containers, unique to this run.
func instance(name string) string {
	return fmt.Sprintf("interop-%s-%d", name, os.Getpid())
}

func runScenarios(t *testing.T, c *chain, mode string, modeEnv []string) {
	env := paymentEnv(modeEnv)
	svc := startService(t, instance(mode), true, env...)
	url := svc.URL + "/v1/code"
	payerKey := writeKey(t, "payer.key", payer.key)
	unfundedKey := writeKey(t, "unfunded.key", unfunded.key)

	t.Run("terms", func(t *testing.T) { testTerms(t, url) })
	var paid payResult
	t.Run("paid", func(t *testing.T) { paid = testPaid(t, c, url, payerKey) })
	t.Run("replay", func(t *testing.T) { testReplay(t, c, url, paid, true) })
	t.Run("concurrent", func(t *testing.T) { testConcurrent(t, c, url, payerKey) })
	t.Run("unfunded", func(t *testing.T) { testUnfunded(t, c, url, unfundedKey) })
	t.Run("v1", func(t *testing.T) { testV1(t, c, url, payerKey) })
	t.Run("docker-down", func(t *testing.T) {
		down := startService(t, instance(mode+"-nodocker"), false,
			append(env, "DOCKER_HOST=unix:///nonexistent.sock")...)
		testDockerDown(t, c, down.URL+"/v1/code", payerKey)
	})
	if got := c.balance(t, payee.address); got != 3*price {
		t.Errorf("payee holds %d after three paid runs, want %d", got, 3*price)
	}
}

// ledger is a snapshot of what the checks compare before and after a scenario.
type ledger struct {
	block                 int64
	payee, payer, unfunds int64
}

func snapshot(t *testing.T, c *chain) ledger {
	t.Helper()
	return ledger{
		block:   c.blockNumber(t),
		payee:   c.balance(t, payee.address),
		payer:   c.balance(t, payer.address),
		unfunds: c.balance(t, unfunded.address),
	}
}

// expectMoved checks that exactly one transfer of the price went from from to the payee
// since before, and returns its transaction hash.
func expectMoved(t *testing.T, c *chain, before ledger, from string) string {
	t.Helper()
	return expectMovedAmount(t, c, before, from, price)
}

// expectMovedAmount is expectMoved for a transfer of amount (atomic units): the price
// of an environment that costs more than the default.
func expectMovedAmount(t *testing.T, c *chain, before ledger, from string, amount int64) string {
	t.Helper()
	after := snapshot(t, c)
	if d := after.payee - before.payee; d != amount {
		t.Errorf("payee balance went up by %d, want exactly %d", d, amount)
	}
	transfers := c.transfersTo(t, payee.address, before.block)
	if len(transfers) != 1 {
		t.Fatalf("%d transfers to the payee, want exactly 1: %+v", len(transfers), transfers)
	}
	tr := transfers[0]
	if !strings.EqualFold(tr.From, from) || tr.Value != amount {
		t.Errorf("transfer %+v, want %d from %s", tr, amount, from)
	}
	return tr.TxHash
}

// expectUnmoved checks that no USDC moved to the payee and no balance changed since before.
func expectUnmoved(t *testing.T, c *chain, before ledger) {
	t.Helper()
	after := snapshot(t, c)
	after.block = before.block
	if after != before {
		t.Errorf("balances changed: before %+v, after %+v", before, after)
	}
	if tr := c.transfersTo(t, payee.address, before.block); len(tr) != 0 {
		t.Errorf("unexpected transfers to the payee: %+v", tr)
	}
}

// waitFor polls cond for up to d: the answer can reach the client a moment before a
// block is visible to another RPC call.
func waitFor(d time.Duration, cond func() bool) {
	deadline := time.Now().Add(d)
	for !cond() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
}
