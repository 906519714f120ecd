package payments

import (
	"context"
	"errors"
	"log/slog"
	"math/big"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"sandboxd"
	"sandboxd/payments/chain"
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
func wantPending(tb testing.TB, l Ledger, entry ledger.Entry, out http.Header, err error, tx string) ledger.Entry {
	tb.Helper()
	if out != nil {
		tb.Fatalf("headers %v with an unknown settlement: the answer would be delivered", out)
	}
	var e *sandboxd.Error
	if !errors.As(err, &e) || e.Code != sandboxd.CodePending {
		tb.Fatalf("error %v, want CodePending", err)
	}
	if e.Header.Get(x402.HeaderPaymentRequired) != "" || !strings.Contains(e.Message, "do not pay again") {
		tb.Fatalf("a pending settlement answered like a refusal: %q, headers %v", e.Message, e.Header)
	}
	var sr x402.SettleResponse
	if err := x402.DecodeHeader(e.Header.Get(x402.HeaderPaymentResponse), &sr); err != nil {
		tb.Fatal(err)
	}
	body, ok := e.Body.(pendingBody)
	if sr.Success || sr.ErrorReason != ledger.ReasonSettlementPending || sr.Transaction != tx ||
		!ok || body.Status != ledger.ReasonSettlementPending || body.Transaction != tx || body.Error == "" {
		tb.Fatalf("settle response %+v, body %+v; want settlement_pending with transaction %q", sr, e.Body, tx)
	}
	row := wantStatus(tb, l, entry, ledger.StatusSettling)
	if row.Reason != ledger.ReasonSettlementPending || row.TxHash != tx {
		tb.Fatalf("row %+v, want settling, pending, tx %q", row, tx)
	}
	return row
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
