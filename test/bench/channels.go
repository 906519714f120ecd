package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// channelProgram is every call of the channels phase.
const channelProgram = "print(1)"

// The channels phase's chain: the Base Sepolia USDC address (where the
// test token is placed), the price ($0.005 in atomic units) and what each
// payer is minted.
const (
	usdcAddress  = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	channelPrice = 5000
	payerFunds   = 10_000_000
)

// account is one of anvil's default accounts (mnemonic "test test ...
// junk"): public test keys that hold ETH on a fresh anvil chain and
// nothing of value anywhere else.
type account struct{ key, address string }

var (
	// relayerAccount settles on chain for the paid services and is their
	// channels' receiver authorizer.
	relayerAccount = account{"0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80", "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"}
	// latencyPayer pays the latency rows, exact and voucher; gasPayer the
	// gas row, on a channel of its own.
	latencyPayer = account{"0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a", "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65"}
	gasPayer     = account{"0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6", "0x90F79bf6EB2c4f870365E785982E1f101E93b906"}
	// payTo receives every payment and every sweep.
	payTo = "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955"
)

// The rows of the channels phase, as the steps name them.
const (
	rowFree           = "free one-shot"
	rowExact          = "exact paid one-shot"
	rowDeposit        = "voucher paid: the deposit call"
	rowVoucher        = "voucher paid one-shot"
	rowFreeSession    = "free session call"
	rowVoucherSession = "voucher session call"
)

// channelsReport is what the channels phase measured.
type channelsReport struct {
	// rows are each row's results, in the order they ran.
	rows map[string][]payResult
	// exactGas is the gasUsed of each counted exact transfer, depositGas
	// that of the latency rows' deposit.
	exactGas   []uint64
	depositGas uint64
	gas        channelGas
	load       string
}

// measureChannels runs the channels phase: anvil mining every
// o.blockTime, a free service and a paid one (settling on chain, offering
// exact and batch-settlement) side by side, the official client paying
// both ways, then a channel of o.gasCalls calls claimed and swept once.
func measureChannels(ctx context.Context, o *options) (channelsReport, error) {
	r := channelsReport{rows: map[string][]payResult{}}
	dir, err := os.MkdirTemp("", "sandboxd-bench-channels-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	keys := map[string]string{}
	for name, a := range map[string]account{"relayer": relayerAccount, "latency": latencyPayer, "gas": gasPayer} {
		keys[name] = filepath.Join(dir, name+".key")
		if err := os.WriteFile(keys[name], []byte(a.key+"\n"), 0o600); err != nil {
			return r, err
		}
	}
	progress("channels: anvil mining every %v, the token, the escrow stand-in and its collector", o.blockTime)
	chain, err := startAnvil(ctx, o.blockTime)
	if err != nil {
		return r, err
	}
	defer chain.stop()
	if err := chain.setup(ctx, map[string]int64{latencyPayer.address: payerFunds, gasPayer.address: payerFunds}); err != nil {
		return r, err
	}
	free, err := startInstance(ctx, o, "bench-free", nil)
	if err != nil {
		return r, err
	}
	defer free.stop()
	// The latency rows' channel must not run dry (a top-up waits for a
	// block) nor be claimed while they run.
	paid, err := startInstance(ctx, o, "bench-paid", paidEnv(chain, dir, "paid", keys["relayer"], "1", "1"))
	if err != nil {
		return r, err
	}
	if err := r.latency(ctx, o, chain, keys["latency"], free.URL, paid.URL); err != nil {
		paid.stop()
		return r, err
	}
	paid.stop()
	gasTotal := fmt.Sprintf("%g", float64(o.gasCalls*channelPrice)/1e6)
	gasSvc, err := startInstance(ctx, o, "bench-gas", paidEnv(chain, dir, "gas", keys["relayer"], gasTotal, gasTotal))
	if err != nil {
		return r, err
	}
	defer gasSvc.stop()
	progress("channels: gas, %d voucher calls on one channel (its deposit %s USDC), claimed and swept at %s USDC charged",
		o.gasCalls, gasTotal, gasTotal)
	r.gas, err = measureGas(ctx, chain, keys["gas"], gasSvc.URL, o.gasCalls, o.gap)
	r.load = loadAverage()
	return r, err
}

// paidEnv configures a paid service on chain, with its ledger in dir
// under name, settling on chain with the relayer's key, quoting minDeposit
// and claiming at once at threshold (both in USDC).
func paidEnv(chain *anvil, dir, name, relayerKey, minDeposit, threshold string) []string {
	return []string{
		"SANDBOX_PAYMENTS_ENABLED=true", "SANDBOX_PAYMENTS_NETWORK=eip155:84532", "SANDBOX_PAYMENTS_ASSET=" + usdcAddress,
		"SANDBOX_PAYMENTS_ASSET_NAME=USDC", "SANDBOX_PAYMENTS_ASSET_VERSION=2",
		"SANDBOX_PAYMENTS_PRICE=" + fmt.Sprintf("%g", float64(channelPrice)/1e6), "SANDBOX_PAYMENTS_PAY_TO=" + payTo,
		"SANDBOX_PAYMENTS_SETTLEMENT=onchain", "SANDBOX_PAYMENTS_RPC_URL=" + chain.rpc,
		"SANDBOX_PAYMENTS_RELAYER_KEY_FILE=" + relayerKey, "SANDBOX_PAYMENTS_LEDGER=" + filepath.Join(dir, name+".db"),
		"SANDBOX_PAYMENTS_CHANNELS_MIN_DEPOSIT=" + minDeposit, "SANDBOX_PAYMENTS_CHANNELS_CLAIM_THRESHOLD=" + threshold,
	}
}

// latency runs the latency rows: o.channelCalls exact calls, each after a
// warm-up one; then one client, o.gap before each call, a free call and a
// voucher call in turns, one-shot and then in a session of each service
// (the first paid call is the channel's deposit, reported apart).
func (r *channelsReport) latency(ctx context.Context, o *options, chain *anvil, key, free, paid string) error {
	n := o.channelCalls
	progress("channels: %d exact calls on chain, %v apart", n, o.gap)
	steps := []payStep{runStep(paid, "")}
	for range n {
		steps = append(steps, runStep(paid, rowExact))
	}
	if err := r.run(ctx, chain, key, "exact", o.gap, steps); err != nil {
		return err
	}
	for _, s := range r.rows[rowExact] {
		rc, err := chain.receipt(s.tx())
		if err != nil {
			return err
		}
		r.exactGas = append(r.exactGas, rc.GasUsed)
	}
	progress("channels: %d free and %d voucher calls in turns, one-shot then in sessions, %v apart", n, n, o.gap)
	steps = []payStep{runStep(free, ""), runStep(paid, rowDeposit)}
	for range n {
		steps = append(steps, runStep(free, rowFree), runStep(paid, rowVoucher))
	}
	steps = append(steps, openStep(free, "free"), openStep(paid, "paid"))
	for range n {
		steps = append(steps, sessionRunStep(free, "free", rowFreeSession), sessionRunStep(paid, "paid", rowVoucherSession))
	}
	if err := r.run(ctx, chain, key, "batch-settlement", o.gap, steps); err != nil {
		return err
	}
	rc, err := chain.receipt(r.rows[rowDeposit][0].tx())
	r.depositGas = rc.GasUsed
	return err
}

// run makes steps with the official client paying in scheme, checks every
// answer and adds the counted ones to their rows.
func (r *channelsReport) run(ctx context.Context, chain *anvil, key, scheme string, gap time.Duration, steps []payStep) error {
	results, err := payRun(ctx, chain.rpc, key, scheme, gap, steps)
	if err != nil {
		return err
	}
	for i, res := range results {
		if err := res.check(steps[i].As != "", paidAs(steps[i].kind, scheme), channelPrice); err != nil {
			return fmt.Errorf("%s call %d (%s): %w", scheme, i+1, steps[i].URL, err)
		}
		if steps[i].kind != "" {
			r.rows[steps[i].kind] = append(r.rows[steps[i].kind], res)
		}
	}
	return nil
}

// paidAs is how a row's calls must be paid: "exact", "deposit", "voucher"
// or not at all ("").
func paidAs(row, scheme string) string {
	switch row {
	case rowExact:
		return "exact"
	case rowDeposit:
		return "deposit"
	case rowVoucher, rowVoucherSession:
		if scheme == "batch-settlement" {
			return "voucher"
		}
	}
	return ""
}

// kilo formats n in thousands ("138.2 k").
func kilo(n uint64) string { return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + " k" }
