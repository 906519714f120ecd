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
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// mustOpenRows puts testEntry(i) in the ledger in each state of states
// (reserved or settling), as a crash would leave them.
func mustOpenRows(tb testing.TB, l *SQLLedger, states map[int]string) {
	tb.Helper()
	ctx := context.Background()
	for i, status := range states {
		e := testEntry(i)
		if err := l.Reserve(ctx, e); err != nil {
			tb.Fatal(err)
		}
		if status == StatusSettling {
			if err := l.MarkSettling(ctx, e.Payer, e.Nonce); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// bufLog returns a logger writing text lines into the returned buffer.
func bufLog() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

func TestLedgerPending(t *testing.T) {
	ctx := context.Background()
	l := mustLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	mustOpenRows(t, l, map[int]string{1: StatusReserved, 2: StatusSettling, 3: StatusSettling, 4: StatusReserved})
	for _, step := range []func() error{
		func() error { return l.MarkSettled(ctx, testEntry(3).Payer, testEntry(3).Nonce, "0x1", "ok") },
		func() error { return l.MarkReleased(ctx, testEntry(4).Payer, testEntry(4).Nonce) },
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
	want := map[string]string{key(testEntry(1).Nonce): StatusReserved, key(testEntry(2).Nonce): StatusSettling}
	if len(got) != len(want) || got[key(testEntry(1).Nonce)] != StatusReserved || got[key(testEntry(2).Nonce)] != StatusSettling {
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
		"chain":       {used: map[string]bool{common.HexToHash(testEntry(1).Nonce).Hex(): true}},
	} {
		t.Run(name, func(t *testing.T) {
			l := mustLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
			mustOpenRows(t, l, map[int]string{1: StatusReserved, 2: StatusReserved})
			rep, err := Recover(ctx, l, oracle, nil)
			if err != nil || rep != (RecoverReport{Released: 2}) {
				t.Fatalf("Recover = %+v, %v; want 2 released", rep, err)
			}
			if n := oracle.asked.Load(); n != 0 {
				t.Fatalf("the settler was asked %d times about reserved rows", n)
			}
			wantStatus(t, l, testEntry(1), StatusReleased)
			// The same payment may be offered again.
			if err := l.Reserve(ctx, testEntry(1)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRecoverSettlingOnchain: the chain says whether a settling row was
// collected.
func TestRecoverSettlingOnchain(t *testing.T) {
	ctx := context.Background()
	l := mustLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	mustOpenRows(t, l, map[int]string{1: StatusSettling, 2: StatusSettling})
	used := map[string]bool{common.HexToHash(testEntry(1).Nonce).Hex(): true}
	rep, err := Recover(ctx, l, &nonceOracle{used: used}, nil)
	if err != nil || rep != (RecoverReport{Settled: 1, Released: 1}) {
		t.Fatalf("Recover = %+v, %v; want 1 settled, 1 released", rep, err)
	}
	wantStatus(t, l, testEntry(1), StatusSettled)
	wantStatus(t, l, testEntry(2), StatusReleased)
	if err := l.Reserve(ctx, testEntry(1)); !errors.Is(err, errAlreadyUsed) {
		t.Fatalf("Reserve of a collected payment = %v, want errAlreadyUsed", err)
	}
	if err := l.Reserve(ctx, testEntry(2)); err != nil {
		t.Fatalf("Reserve of a released payment: %v", err)
	}
}

// TestRecoverSettlingChainDown: when the chain cannot be asked, a settling
// row stays settling (refused) and the next start resolves it.
func TestRecoverSettlingChainDown(t *testing.T) {
	ctx := context.Background()
	l := mustLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	mustOpenRows(t, l, map[int]string{1: StatusSettling})
	log, buf := bufLog()
	down := sandboxd.Errorf(sandboxd.CodeUnavailable, "test", "down")
	rep, err := Recover(ctx, l, &nonceOracle{err: down}, log)
	if err != nil || rep != (RecoverReport{Left: 1}) {
		t.Fatalf("Recover = %+v, %v; want 1 left", rep, err)
	}
	wantStatus(t, l, testEntry(1), StatusSettling)
	if !strings.Contains(buf.String(), "level=WARN") {
		t.Fatalf("no warning logged:\n%s", buf)
	}
	if err := l.Reserve(ctx, testEntry(1)); !errors.Is(err, errAlreadyUsed) {
		t.Fatalf("Reserve of a settling payment = %v, want errAlreadyUsed", err)
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
	l := mustLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	mustOpenRows(t, l, map[int]string{1: StatusSettling, 2: StatusReserved})
	log, buf := bufLog()
	rep, err := Recover(ctx, l, newFacilitatorSettler(facilitatorConfig{URL: "http://127.0.0.1:1"}), log)
	if err != nil || rep != (RecoverReport{Failed: 1, Released: 1}) {
		t.Fatalf("Recover = %+v, %v; want 1 failed, 1 released", rep, err)
	}
	row := wantStatus(t, l, testEntry(1), StatusFailed)
	if row.Reason != reasonUnknownAfterRestart || row.TxHash != "" {
		t.Fatalf("row %+v", row)
	}
	var warn string
	for line := range strings.Lines(buf.String()) {
		if strings.Contains(line, "level=WARN") {
			warn = line
		}
	}
	for _, part := range []string{key(testEntry(1).Payer), key(testEntry(1).Nonce), reasonUnknownAfterRestart} {
		if !strings.Contains(warn, part) {
			t.Fatalf("warning %q does not name %s; log:\n%s", warn, part, buf)
		}
	}
	if err := l.Reserve(ctx, testEntry(1)); !errors.Is(err, errAlreadyUsed) {
		t.Fatalf("Reserve after an unknown settlement = %v, want errAlreadyUsed", err)
	}
}

// TestLedgerMigratesSettling opens a ledger made before the settling state:
// its reserved rows (possibly mid-settlement under the old code) become
// settling, the rest is kept, and the new state can be written.
func TestLedgerMigratesSettling(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(ledgerTable, "'settling', ", "", 1)
	if old == ledgerTable {
		t.Fatal("the schema no longer lists 'settling', ")
	}
	stmts := []string{
		strings.Replace(old, "%s", "payments", 1),
		`INSERT INTO payments (payer, nonce, created_at, updated_at, amount, network, asset, status, tx_hash)
VALUES ('0xa', '0x1', 't', 't', '5000', 'n', 'a', 'reserved', ''), ('0xa', '0x2', 't', 't', '5000', 'n', 'a', 'settled', '0xtx')`,
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO payments (payer, nonce, created_at, updated_at, amount, network, asset, status)
VALUES ('0xa', '0x3', 't', 't', '5000', 'n', 'a', 'settling')`); err == nil {
		t.Fatal("the old schema accepted 'settling'")
	}
	db.Close()

	for range 2 { // the second open finds nothing to do
		l, err := OpenLedger(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if got := wantStatus(t, l, Entry{Payer: "0xa", Nonce: "0x1"}, StatusSettling); got.Amount != "5000" {
			t.Fatalf("row %+v", got)
		}
		if got := wantStatus(t, l, Entry{Payer: "0xa", Nonce: "0x2"}, StatusSettled); got.TxHash != "0xtx" {
			t.Fatalf("row %+v", got)
		}
		l.Close()
	}
	l := mustLedger(t, path)
	mustOpenRows(t, l, map[int]string{5: StatusSettling})
	wantStatus(t, l, testEntry(5), StatusSettling)
}

// TestGateSettlingIsDurableBeforeSettle: the settling row is committed
// before the settler is asked, so a crash during the settlement finds it.
func TestGateSettlingIsDurableBeforeSettle(t *testing.T) {
	ctx := context.Background()
	s := &fakeSettler{settleTx: "0x1"}
	g, _ := newTestGate(t, s)
	// A second handle on the file sees only committed rows, as a restarted
	// process would.
	other := mustSecondHandle(t, g.ledger.(*SQLLedger).path)
	s.onSettle = func(p *x402.Payment) {
		e := Entry{Payer: p.Transfer.Payer(), Nonce: p.Transfer.NonceHex()}
		if got, err := other.Get(ctx, e.Payer, e.Nonce); err != nil || got.Status != StatusSettling {
			t.Errorf("at Settle the row is %+v, %v; want settling", got, err)
		}
	}
	c, err := begin(g, ctx, paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), nil))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Settle(ctx, sandboxd.Result{}); err != nil {
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
	l, err := OpenLedger(ctx, path)
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
	c.Settle(ctx, sandboxd.Result{}) // exits inside the settler
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
		cmd.Env = append(os.Environ(), crashEnvLedger+"="+path, crashEnvHeader+"="+h.Get(x402.HeaderPaymentSignature), crashEnvAt+"="+at)
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
	entry := func(p paid) Entry { return Entry{Payer: p.p.Transfer.Payer(), Nonce: p.p.Transfer.NonceHex()} }

	t.Run("facilitator", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		inRun, inSettle := crash(t, path, "run"), crash(t, path, "settle")
		l := mustLedger(t, path)
		wantStatus(t, l, entry(inRun), StatusReserved)
		wantStatus(t, l, entry(inSettle), StatusSettling)

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
		if _, err := c.Settle(ctx, sandboxd.Result{}); err != nil {
			t.Fatal(err)
		}
		_, err = begin(g, ctx, paidRequest(inSettle.h))
		wantPaymentError(t, err, "already used")
	})

	t.Run("onchain", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		landed, lost := crash(t, path, "settle"), crash(t, path, "settle")
		l := mustLedger(t, path)
		oracle := &nonceOracle{used: map[string]bool{common.Hash(landed.p.Transfer.Nonce).Hex(): true}}
		rep, err := Recover(ctx, l, oracle, nil)
		if err != nil || rep != (RecoverReport{Settled: 1, Released: 1}) {
			t.Fatalf("Recover = %+v, %v", rep, err)
		}
		wantStatus(t, l, entry(landed), StatusSettled)
		wantStatus(t, l, entry(lost), StatusReleased)
	})
}
