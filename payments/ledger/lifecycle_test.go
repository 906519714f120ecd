package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"sandboxd"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

func TestLedgerLifecycle(t *testing.T) {
	ctx := context.Background()
	l := ledgertest.OpenFile(t, filepath.Join(t.TempDir(), "a", "b", "ledger.db"))
	e := ledgertest.Entry(1)

	if err := l.Reserve(ctx, e); err != nil {
		t.Fatal(err)
	}
	got := ledgertest.WantStatus(t, l, e, ledger.StatusReserved)
	if got.Payer != "0xabcdef0000000000000000000000000000000001" || got.Nonce != fmt.Sprintf("0x%064x", 1) {
		t.Fatalf("key not lower-cased: %s %s", got.Payer, got.Nonce)
	}
	if got.Created.IsZero() || got.Amount != "5000" || got.Network != "eip155:84532" || got.Asset != x402test.Asset {
		t.Fatalf("row %+v", got)
	}
	if err := l.Reserve(ctx, e); !errors.Is(err, ledger.ErrAlreadyUsed) {
		t.Fatalf("second Reserve = %v, want ledger.ErrAlreadyUsed", err)
	}
	// The key is case-insensitive.
	upper := e
	upper.Nonce = fmt.Sprintf("0x%064X", 1)
	upper.Payer = "0XABCDEF0000000000000000000000000000000001"
	if err := l.Reserve(ctx, upper); !errors.Is(err, ledger.ErrAlreadyUsed) {
		t.Fatalf("Reserve in other case = %v, want ledger.ErrAlreadyUsed", err)
	}

	// Released rows may be reserved again; settled ones may not.
	if err := l.MarkReleased(ctx, e.Payer, e.Nonce); err != nil {
		t.Fatal(err)
	}
	ledgertest.WantStatus(t, l, e, ledger.StatusReleased)
	if err := l.MarkReleased(ctx, e.Payer, e.Nonce); !errors.Is(err, ledger.ErrNotReserved) {
		t.Fatalf("second release = %v, want ledger.ErrNotReserved", err)
	}
	if err := l.Reserve(ctx, e); err != nil {
		t.Fatalf("Reserve after release: %v", err)
	}
	// Settled and failed start from settling, never from reserved.
	if err := l.MarkSettled(ctx, e.Payer, e.Nonce, "0xtx", "ok", nil); !errors.Is(err, ledger.ErrNotReserved) {
		t.Fatalf("MarkSettled of a reserved row = %v, want ledger.ErrNotReserved", err)
	}
	if err := l.MarkFailed(ctx, e.Payer, e.Nonce, "", x402.ReasonUnexpectedSettle); !errors.Is(err, ledger.ErrNotReserved) {
		t.Fatalf("MarkFailed of a reserved row = %v, want ledger.ErrNotReserved", err)
	}
	if err := l.MarkSettling(ctx, e.Payer, e.Nonce, nil); err != nil {
		t.Fatal(err)
	}
	ledgertest.WantStatus(t, l, e, ledger.StatusSettling)
	if err := l.MarkSettling(ctx, e.Payer, e.Nonce, nil); !errors.Is(err, ledger.ErrNotReserved) {
		t.Fatalf("second MarkSettling = %v, want ledger.ErrNotReserved", err)
	}
	if err := l.Reserve(ctx, e); !errors.Is(err, ledger.ErrAlreadyUsed) {
		t.Fatalf("Reserve while settling = %v, want ledger.ErrAlreadyUsed", err)
	}
	if err := l.MarkSettled(ctx, e.Payer, e.Nonce, "0xtx", "ok", nil); err != nil {
		t.Fatal(err)
	}
	got = ledgertest.WantStatus(t, l, e, ledger.StatusSettled)
	if got.TxHash != "0xtx" || got.RunStatus != "ok" {
		t.Fatalf("settled row %+v", got)
	}
	if err := l.Reserve(ctx, e); !errors.Is(err, ledger.ErrAlreadyUsed) {
		t.Fatalf("Reserve after settle = %v, want ledger.ErrAlreadyUsed", err)
	}
	if err := l.MarkReleased(ctx, e.Payer, e.Nonce); !errors.Is(err, ledger.ErrNotReserved) {
		t.Fatalf("release after settle = %v, want ledger.ErrNotReserved", err)
	}

	f := ledgertest.Entry(2)
	if err := l.Reserve(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := l.MarkSettling(ctx, f.Payer, f.Nonce, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.MarkFailed(ctx, f.Payer, f.Nonce, "0xbad", x402.ReasonSettlementReverted); err != nil {
		t.Fatal(err)
	}
	got = ledgertest.WantStatus(t, l, f, ledger.StatusFailed)
	if got.Reason != x402.ReasonSettlementReverted || got.TxHash != "0xbad" {
		t.Fatalf("failed row %+v", got)
	}
	if err := l.Reserve(ctx, f); !errors.Is(err, ledger.ErrAlreadyUsed) {
		t.Fatalf("Reserve after failure = %v, want ledger.ErrAlreadyUsed", err)
	}

	// A settlement that never left is released from settling, and the
	// payment may be reserved again.
	g := ledgertest.Entry(3)
	for _, step := range []func() error{
		func() error { return l.Reserve(ctx, g) },
		func() error { return l.MarkSettling(ctx, g.Payer, g.Nonce, nil) },
		func() error { return l.MarkReleased(ctx, g.Payer, g.Nonce) },
		func() error { return l.Reserve(ctx, g) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	ledgertest.WantStatus(t, l, g, ledger.StatusReserved)
}

func TestLedgerConcurrentReserve(t *testing.T) {
	l := ledgertest.OpenFile(t, filepath.Join(t.TempDir(), "ledger.db"))
	e := ledgertest.Entry(7)
	var wins, used atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 50 {
		wg.Go(func() {
			<-start
			err := l.Reserve(context.Background(), e)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, ledger.ErrAlreadyUsed):
				used.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if wins.Load() != 1 || used.Load() != 49 {
		t.Fatalf("%d reserved, %d refused; want 1 and 49", wins.Load(), used.Load())
	}
}

func TestLedgerSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := ledger.OpenFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	e := ledgertest.Entry(3)
	if err := l.Reserve(ctx, e); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = ledgertest.OpenFile(t, path)
	if err := l.Reserve(ctx, e); !errors.Is(err, ledger.ErrAlreadyUsed) {
		t.Fatalf("Reserve after reopen = %v, want ledger.ErrAlreadyUsed", err)
	}
	ledgertest.WantStatus(t, l, e, ledger.StatusReserved)
}

func TestLedgerWriteFailureIsUnavailable(t *testing.T) {
	ctx := context.Background()
	l := ledgertest.OpenFile(t, filepath.Join(t.TempDir(), "ledger.db"))
	l.Close() // every write now fails, as on a broken disk
	err := l.Reserve(ctx, ledgertest.Entry(1))
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Fatalf("Reserve on a closed ledger = %v, want CodeUnavailable", err)
	}
}

func TestOpenLedgerUnwritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The parent "directory" is a file.
	_, err := ledger.OpenFile(context.Background(), filepath.Join(file, "ledger.db"))
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Fatalf("ledger.OpenFile = %v, want CodeUnavailable", err)
	}
}
