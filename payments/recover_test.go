package payments

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// bufLog returns a logger writing text lines into the returned buffer.
func bufLog() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

func TestLedgerPending(t *testing.T) {
	ctx := context.Background()
	l := ledgertest.OpenFile(t, filepath.Join(t.TempDir(), "ledger.db"))
	ledgertest.OpenRows(t, l, map[int]string{1: ledger.StatusReserved, 2: ledger.StatusSettling, 3: ledger.StatusSettling, 4: ledger.StatusReserved})
	for _, step := range []func() error{
		func() error {
			return l.MarkSettled(ctx, ledgertest.Entry(3).Payer, ledgertest.Entry(3).Nonce, "0x1", "ok", nil)
		},
		func() error { return l.MarkReleased(ctx, ledgertest.Entry(4).Payer, ledgertest.Entry(4).Nonce) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	pending, err := l.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range pending {
		got[e.Nonce] = e.Status
	}
	want := map[string]string{strings.ToLower(ledgertest.Entry(1).Nonce): ledger.StatusReserved, strings.ToLower(ledgertest.Entry(2).Nonce): ledger.StatusSettling}
	if len(got) != len(want) || got[strings.ToLower(ledgertest.Entry(1).Nonce)] != ledger.StatusReserved || got[strings.ToLower(ledgertest.Entry(2).Nonce)] != ledger.StatusSettling {
		t.Fatalf("Pending = %v, want %v", got, want)
	}
}

// TestRecoverReserved: a reserved row's settlement was never sent, so it
// is released in every mode, without asking the settler.
func TestRecoverReserved(t *testing.T) {
	ctx := context.Background()
	down := sandboxd.Errorf(sandboxd.CodeUnavailable, "test", "down")
	for name, oracle := range map[string]*nonceOracle{
		"facilitator": {err: errNonceStateUnknown},
		"chain down":  {err: down},
		"chain":       {used: map[string]bool{common.HexToHash(ledgertest.Entry(1).Nonce).Hex(): true}},
	} {
		t.Run(name, func(t *testing.T) {
			l := ledgertest.OpenFile(t, filepath.Join(t.TempDir(), "ledger.db"))
			ledgertest.OpenRows(t, l, map[int]string{1: ledger.StatusReserved, 2: ledger.StatusReserved})
			rep, err := Recover(ctx, l, oracle, nil)
			if err != nil || rep != (RecoverReport{Released: 2}) {
				t.Fatalf("Recover = %+v, %v; want 2 released", rep, err)
			}
			if n := oracle.asked.Load(); n != 0 {
				t.Fatalf("the settler was asked %d times about reserved rows", n)
			}
			ledgertest.WantStatus(t, l, ledgertest.Entry(1), ledger.StatusReleased)
			// The same payment may be offered again.
			if err := l.Reserve(ctx, ledgertest.Entry(1)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRecoverSettlingOnchain: the chain says whether a settling row was
// collected.
func TestRecoverSettlingOnchain(t *testing.T) {
	ctx := context.Background()
	l := ledgertest.OpenFile(t, filepath.Join(t.TempDir(), "ledger.db"))
	ledgertest.OpenRows(t, l, map[int]string{1: ledger.StatusSettling, 2: ledger.StatusSettling})
	used := map[string]bool{common.HexToHash(ledgertest.Entry(1).Nonce).Hex(): true}
	rep, err := Recover(ctx, l, &nonceOracle{used: used}, nil)
	if err != nil || rep != (RecoverReport{Settled: 1, Released: 1}) {
		t.Fatalf("Recover = %+v, %v; want 1 settled, 1 released", rep, err)
	}
	ledgertest.WantStatus(t, l, ledgertest.Entry(1), ledger.StatusSettled)
	ledgertest.WantStatus(t, l, ledgertest.Entry(2), ledger.StatusReleased)
	if err := l.Reserve(ctx, ledgertest.Entry(1)); !errors.Is(err, ledger.ErrAlreadyUsed) {
		t.Fatalf("Reserve of a collected payment = %v, want ledger.ErrAlreadyUsed", err)
	}
	if err := l.Reserve(ctx, ledgertest.Entry(2)); err != nil {
		t.Fatalf("Reserve of a released payment: %v", err)
	}
}

// TestRecoverSettlingChainDown: when the chain cannot be asked, a settling
// row stays settling (refused) and the next start resolves it.
func TestRecoverSettlingChainDown(t *testing.T) {
	ctx := context.Background()
	l := ledgertest.OpenFile(t, filepath.Join(t.TempDir(), "ledger.db"))
	ledgertest.OpenRows(t, l, map[int]string{1: ledger.StatusSettling})
	log, buf := bufLog()
	down := sandboxd.Errorf(sandboxd.CodeUnavailable, "test", "down")
	rep, err := Recover(ctx, l, &nonceOracle{err: down}, log)
	if err != nil || rep != (RecoverReport{Left: 1}) {
		t.Fatalf("Recover = %+v, %v; want 1 left", rep, err)
	}
	ledgertest.WantStatus(t, l, ledgertest.Entry(1), ledger.StatusSettling)
	if !strings.Contains(buf.String(), "level=WARN") {
		t.Fatalf("no warning logged:\n%s", buf)
	}
	if err := l.Reserve(ctx, ledgertest.Entry(1)); !errors.Is(err, ledger.ErrAlreadyUsed) {
		t.Fatalf("Reserve of a settling payment = %v, want ledger.ErrAlreadyUsed", err)
	}
	rep, err = Recover(ctx, l, &nonceOracle{}, nil)
	if err != nil || rep != (RecoverReport{Released: 1}) {
		t.Fatalf("second Recover = %+v, %v; want 1 released", rep, err)
	}
}

// TestRecoverSettlingFacilitator: a facilitator cannot say whether a
// settling row was collected, so it is marked failed and logged for an
// operator, and never admitted again.
func TestRecoverSettlingFacilitator(t *testing.T) {
	ctx := context.Background()
	l := ledgertest.OpenFile(t, filepath.Join(t.TempDir(), "ledger.db"))
	ledgertest.OpenRows(t, l, map[int]string{1: ledger.StatusSettling, 2: ledger.StatusReserved})
	log, buf := bufLog()
	rep, err := Recover(ctx, l, newFacilitatorSettler(facilitatorConfig{URL: "http://127.0.0.1:1"}), log)
	if err != nil || rep != (RecoverReport{Failed: 1, Released: 1}) {
		t.Fatalf("Recover = %+v, %v; want 1 failed, 1 released", rep, err)
	}
	row := ledgertest.WantStatus(t, l, ledgertest.Entry(1), ledger.StatusFailed)
	if row.Reason != ledger.ReasonUnknownAfterRestart || row.TxHash != "" {
		t.Fatalf("row %+v", row)
	}
	var warn string
	for line := range strings.Lines(buf.String()) {
		if strings.Contains(line, "level=WARN") {
			warn = line
		}
	}
	for _, part := range []string{strings.ToLower(ledgertest.Entry(1).Payer), strings.ToLower(ledgertest.Entry(1).Nonce), ledger.ReasonUnknownAfterRestart} {
		if !strings.Contains(warn, part) {
			t.Fatalf("warning %q does not name %s; log:\n%s", warn, part, buf)
		}
	}
	if err := l.Reserve(ctx, ledgertest.Entry(1)); !errors.Is(err, ledger.ErrAlreadyUsed) {
		t.Fatalf("Reserve after an unknown settlement = %v, want ledger.ErrAlreadyUsed", err)
	}
}

// TestGateSettlingIsDurableBeforeSettle: the settling row is committed
// before the settler is asked, so a crash during the settlement finds it.
func TestGateSettlingIsDurableBeforeSettle(t *testing.T) {
	ctx := context.Background()
	s := &fakeSettler{settleTx: "0x1"}
	path := filepath.Join(t.TempDir(), "ledger.db")
	g, _ := newTestGateAt(t, s, path)
	// A second connection to the file sees only committed rows, as a
	// restarted process would.
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	s.onSettle = func(p *x402.Payment) {
		var status string
		err := other.QueryRowContext(ctx, `SELECT status FROM payments WHERE payer = ? AND nonce = ?`,
			strings.ToLower(p.Transfer.Payer()), strings.ToLower(p.Transfer.NonceHex())).Scan(&status)
		if err != nil || status != ledger.StatusSettling {
			t.Errorf("at Settle the row is %q, %v; want settling", status, err)
		}
	}
	c, err := begin(g, ctx, paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), nil))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); err != nil {
		t.Fatal(err)
	}
}

// The crash test runs the gate in a child process (this test binary) that
// exits abruptly in the middle of a paid call, then restarts on its ledger.
const (
	crashEnvLedger = "PAYMENTS_CRASH_LEDGER"
	crashEnvHeader = "PAYMENTS_CRASH_HEADER"
	crashEnvAt     = "PAYMENTS_CRASH_AT"
	crashExitCode  = 3
)

// TestCrashChild is the child of TestCrashRecovery; run alone it does
// nothing.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnvLedger)
	if path == "" {
		t.Skip("the child of TestCrashRecovery")
	}
	ctx := context.Background()
	s := &fakeSettler{settleTx: "0x1", onSettle: func(*x402.Payment) { os.Exit(crashExitCode) }}
	cfg := testConfig(t)
	cfg.Ledger = path
	l, err := ledger.OpenFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := newGateWith(cfg, options{Settler: s, Ledger: l, Now: func() time.Time { return x402test.Now }})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(x402.HeaderPaymentSignature, os.Getenv(crashEnvHeader))
	c, err := begin(g, ctx, paidRequest(h))
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv(crashEnvAt) == "run" {
		os.Exit(crashExitCode) // killed while the program runs
	}
	c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}) // exits inside the settler
	t.Fatal("the settler did not crash")
}

// TestCrashRecovery: a process that dies during the run leaves its payment
// reserved, one that dies during the settlement leaves it settling; after a
// restart none is open. Under a facilitator the first may be sent again and
// the second never; on chain the second follows the chain.
func TestCrashRecovery(t *testing.T) {
	ctx := context.Background()
	req := testRequirements(t)
	type paid struct {
		h http.Header
		p *x402.Payment
	}
	crash := func(t *testing.T, path, at string) paid {
		t.Helper()
		h := x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), req, nil))
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		// The child exits without its cleanup: its temporary directories go
		// under one of this test's, which is removed.
		cmd.Env = append(os.Environ(), crashEnvLedger+"="+path, crashEnvHeader+"="+h.Get(x402.HeaderPaymentSignature), crashEnvAt+"="+at,
			"TMPDIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != crashExitCode {
			t.Fatalf("child crashing at %s: %v\n%s", at, err, out)
		}
		p := x402test.Decode(t, h)
		if err := x402.Verify(req, p, x402test.Now); err != nil {
			t.Fatal(err)
		}
		return paid{h, p}
	}
	entry := func(p paid) ledger.Entry {
		return ledger.Entry{Payer: p.p.Transfer.Payer(), Nonce: p.p.Transfer.NonceHex()}
	}

	t.Run("facilitator", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		inRun, inSettle := crash(t, path, "run"), crash(t, path, "settle")
		l := ledgertest.OpenFile(t, path)
		ledgertest.WantStatus(t, l, entry(inRun), ledger.StatusReserved)
		ledgertest.WantStatus(t, l, entry(inSettle), ledger.StatusSettling)

		s := &fakeSettler{settleTx: "0x2"} // NonceUsed: errNonceStateUnknown
		rep, err := Recover(ctx, l, s, nil)
		if err != nil || rep != (RecoverReport{Released: 1, Failed: 1}) {
			t.Fatalf("Recover = %+v, %v", rep, err)
		}
		cfg := testConfig(t)
		cfg.Ledger = path
		g, err := newGateWith(cfg, options{Settler: s, Ledger: l, Now: func() time.Time { return x402test.Now }})
		if err != nil {
			t.Fatal(err)
		}
		c, err := begin(g, ctx, paidRequest(inRun.h))
		if err != nil {
			t.Fatalf("the payment of the crashed run is refused: %v", err)
		}
		if _, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); err != nil {
			t.Fatal(err)
		}
		_, err = begin(g, ctx, paidRequest(inSettle.h))
		wantPaymentError(t, err, "already used")
	})

	t.Run("onchain", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		landed, lost := crash(t, path, "settle"), crash(t, path, "settle")
		l := ledgertest.OpenFile(t, path)
		oracle := &nonceOracle{used: map[string]bool{common.Hash(landed.p.Transfer.Nonce).Hex(): true}}
		rep, err := Recover(ctx, l, oracle, nil)
		if err != nil || rep != (RecoverReport{Settled: 1, Released: 1}) {
			t.Fatalf("Recover = %+v, %v", rep, err)
		}
		ledgertest.WantStatus(t, l, entry(landed), ledger.StatusSettled)
		ledgertest.WantStatus(t, l, entry(lost), ledger.StatusReleased)
	})
}

// nonceOracle is a Settler whose NonceUsed answers from a map, and counts
// the questions.
type nonceOracle struct {
	fakeSettler
	used  map[string]bool
	err   error
	asked atomic.Int32
}

func (o *nonceOracle) NonceUsed(_ context.Context, from common.Address, nonce [32]byte) (bool, error) {
	o.asked.Add(1)
	if o.err != nil {
		return false, o.err
	}
	return o.used[common.Hash(nonce).Hex()], nil
}
