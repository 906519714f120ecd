package payments

import (
	"context"
	"errors"
	"log/slog"
	"math/big"
	"path/filepath"
	"strings"
	"testing"

	"sandboxd"
	"sandboxd/payments/chain"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/x402test"

	"github.com/ethereum/go-ethereum/common"
)

// testConfig is a valid facilitator configuration with its ledger in a
// temporary directory.
func testConfig(tb testing.TB) Config {
	tb.Helper()
	return Config{
		Network:           "eip155:84532",
		Asset:             x402test.Asset,
		AssetName:         "USDC",
		AssetVersion:      "2",
		Price:             "0.005",
		PayTo:             x402test.PayTo,
		MaxTimeoutSeconds: 120,
		Settlement:        SettleFacilitator,
		FacilitatorURL:    "http://127.0.0.1:1/facilitator",
		Ledger:            filepath.Join(tb.TempDir(), "sub", "ledger.db"),
	}
}

// testRequirements are the terms testConfig quotes.
func testRequirements(tb testing.TB) x402.Requirements {
	tb.Helper()
	req, err := testConfig(tb).Requirements()
	if err != nil {
		tb.Fatal(err)
	}
	return req
}

// begin runs both phases of the gate, Check then Reserve, as httpapi does
// around the sandbox slot.
func begin(g *Gate, ctx context.Context, r sandboxd.PaymentRequest) (sandboxd.Charge, error) {
	a, err := g.Check(ctx, r)
	if err != nil {
		return nil, err
	}
	return a.Reserve(ctx)
}

// wantPending asserts the answer of a settlement whose outcome is unknown:
// no answer headers, CodePending (202, never a 402 inviting a second
// payment) with a PAYMENT-RESPONSE saying settlement_pending and naming tx,
// and a body carrying the same; the row stays settling, marked pending.
func wantPending(tb testing.TB, l Ledger, entry ledger.Entry, out *sandboxd.Settlement, err error, tx string) ledger.Entry {
	tb.Helper()
	if out != nil {
		tb.Fatalf("settlement %+v with an unknown settlement: the answer would be delivered", out)
	}
	var e *sandboxd.Error
	if !errors.As(err, &e) || e.Code != sandboxd.CodePending {
		tb.Fatalf("error %v, want CodePending", err)
	}
	if e.Payment == nil || e.Payment.Terms != nil || !strings.Contains(e.Message, "do not pay again") {
		tb.Fatalf("a pending settlement answered like a refusal: %q, payment %+v", e.Message, e.Payment)
	}
	name, sr := report(tb, e.Payment.Settlement)
	if name != x402.HeaderPaymentResponse || sr.Success || sr.ErrorReason != ledger.ReasonSettlementPending || sr.Transaction != tx {
		tb.Fatalf("%s: settle response %+v; want settlement_pending with transaction %q", name, sr, tx)
	}
	row := ledgertest.WantStatus(tb, l, entry, ledger.StatusSettling)
	if row.Reason != ledger.ReasonSettlementPending || row.TxHash != tx {
		tb.Fatalf("row %+v, want settling, pending, tx %q", row, tx)
	}
	return row
}

// report is the settlement s as its payer reads it (x402.SettleReport):
// the header httpapi answers it in, and x402's SettleResponse. A nil s
// fails.
func report(tb testing.TB, s *sandboxd.Settlement) (string, x402.SettleResponse) {
	tb.Helper()
	if s == nil {
		tb.Fatal("no settlement report")
	}
	return x402.SettleReport(s.Version, x402.SettleResponse{Success: s.Success, ErrorReason: s.ErrorReason,
		Transaction: s.Transaction, Network: s.Network, Payer: s.Payer})
}

// errReport is the settlement report that e carries (see report).
func errReport(tb testing.TB, e *sandboxd.Error) x402.SettleResponse {
	tb.Helper()
	if e.Payment == nil {
		tb.Fatalf("error %v carries no payment details", e)
	}
	_, sr := report(tb, e.Payment.Settlement)
	return sr
}

// newGateWith returns a Gate quoting the terms of cfg with the given parts.
// It validates cfg but opens nothing and runs no recovery.
func newGateWith(cfg Config, o options) (*Gate, error) {
	if err := cfg.Validate(o.Run); err != nil {
		return nil, err
	}
	return newGate(cfg, o)
}

// dialChain dials the on-chain settler of cfg as NewGate does; tune, when
// given, adjusts its configuration first.
func dialChain(ctx context.Context, cfg Config, req x402.Requirements, log *slog.Logger, tune ...func(*chain.Config)) (*chain.Settler, error) {
	cc := cfg.chainConfig(log)
	for _, f := range tune {
		f(&cc)
	}
	return chain.Dial(ctx, cfg.RelayerKeyFile, req, cc)
}

// testChainConfig is a chain.Config for the test chain's token with the
// default timeouts.
func testChainConfig(asset common.Address, chainID *big.Int) chain.Config {
	return chain.Config{Asset: asset, ChainID: chainID, CheckTimeout: DefaultVerifyTimeout,
		SettleTimeout: DefaultSettleTimeout, RPCTimeout: DefaultRPCTimeout}
}
