//go:build linux

package payments

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// mustFill writes a file at path until the disk is full.
func mustFill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			return
		}
	}
}

// TestLedgerDiskFull: with the ledger's disk full a paid call is refused
// before it runs (CodeUnavailable, saying the ledger could not record the
// payment) and a settlement is not sent; once space is freed paid calls
// work again without a restart, and the next start releases the payment
// whose settlement was stopped.
func TestLedgerDiskFull(t *testing.T) {
	ctx := context.Background()
	dir := ledgertest.Tmpfs(t, "256k")
	s := &fakeSettler{settleTx: "0x1"}
	cfg := testConfig(t)
	cfg.Ledger = filepath.Join(dir, "ledger.db")
	l := ledgertest.OpenFile(t, cfg.Ledger)
	g, err := newGateWith(cfg, options{Settler: s, Ledger: l, Now: func() time.Time { return x402test.Now }})
	if err != nil {
		t.Fatal(err)
	}
	pay := func() sandboxd.PaymentRequest {
		return paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), nil)))
	}
	running := pay()
	charge, err := begin(g, ctx, running)
	if err != nil {
		t.Fatal(err)
	}

	filler := filepath.Join(dir, "filler")
	mustFill(t, filler)
	_, err = begin(g, ctx, pay())
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(sandboxd.ErrorMessage(err), "ledger could not record the payment") {
		t.Fatalf("Begin on a full disk = %v, want CodeUnavailable saying the ledger could not record the payment", err)
	}
	// The run admitted before the disk filled is not settled unrecorded.
	out, err := charge.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}})
	if out != nil || sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(sandboxd.ErrorMessage(err), "nothing was charged") {
		t.Fatalf("Settle on a full disk = %v, %v; want CodeUnavailable and no answer", out, err)
	}
	if n := s.settles.Load(); n != 0 {
		t.Fatalf("the settler was called %d times on a full disk", n)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	c, err := begin(g, ctx, pay())
	if err != nil {
		t.Fatalf("Begin after space was freed: %v", err)
	}
	if _, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); err != nil {
		t.Fatalf("Settle after space was freed: %v", err)
	}
	// The stopped payment's row stayed reserved (its release could not be
	// written either); the next start releases it and it may be sent again.
	if rep, err := Recover(ctx, l, s, nil); err != nil || rep != (RecoverReport{Released: 1}) {
		t.Fatalf("Recover = %+v, %v; want 1 released", rep, err)
	}
	c, err = begin(g, ctx, running)
	if err != nil {
		t.Fatalf("the stopped payment after a restart: %v", err)
	}
	c.Release(ctx)
}
