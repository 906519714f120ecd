package payments

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

func mustLedger(tb testing.TB, path string) *ledger.SQL {
	tb.Helper()
	l, err := ledger.OpenFile(context.Background(), path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

func testEntry(i int) ledger.Entry {
	return ledger.Entry{
		Payer:   "0xAbCdEf0000000000000000000000000000000001",
		Nonce:   fmt.Sprintf("0x%064X", i),
		Amount:  "5000",
		Network: "eip155:84532",
		Asset:   x402test.Asset,
	}
}

func wantStatus(tb testing.TB, l Ledger, e ledger.Entry, status string) ledger.Entry {
	tb.Helper()
	got, err := l.Get(context.Background(), e.Payer, e.Nonce)
	if err != nil {
		tb.Fatal(err)
	}
	if got.Status != status {
		tb.Fatalf("status %q, want %q", got.Status, status)
	}
	return got
}

func TestLedgerLifecycle(t *testing.T) {
	ctx := context.Background()
	l := mustLedger(t, filepath.Join(t.TempDir(), "a", "b", "ledger.db"))
	e := testEntry(1)

	if err := l.Reserve(ctx, e); err != nil {
		t.Fatal(err)
	}
	got := wantStatus(t, l, e, ledger.StatusReserved)
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
	wantStatus(t, l, e, ledger.StatusReleased)
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
	wantStatus(t, l, e, ledger.StatusSettling)
	if err := l.MarkSettling(ctx, e.Payer, e.Nonce, nil); !errors.Is(err, ledger.ErrNotReserved) {
		t.Fatalf("second MarkSettling = %v, want ledger.ErrNotReserved", err)
	}
	if err := l.Reserve(ctx, e); !errors.Is(err, ledger.ErrAlreadyUsed) {
		t.Fatalf("Reserve while settling = %v, want ledger.ErrAlreadyUsed", err)
	}
	if err := l.MarkSettled(ctx, e.Payer, e.Nonce, "0xtx", "ok", nil); err != nil {
		t.Fatal(err)
	}
	got = wantStatus(t, l, e, ledger.StatusSettled)
	if got.TxHash != "0xtx" || got.RunStatus != "ok" {
		t.Fatalf("settled row %+v", got)
	}
	if err := l.Reserve(ctx, e); !errors.Is(err, ledger.ErrAlreadyUsed) {
		t.Fatalf("Reserve after settle = %v, want ledger.ErrAlreadyUsed", err)
	}
	if err := l.MarkReleased(ctx, e.Payer, e.Nonce); !errors.Is(err, ledger.ErrNotReserved) {
		t.Fatalf("release after settle = %v, want ledger.ErrNotReserved", err)
	}

	f := testEntry(2)
	if err := l.Reserve(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := l.MarkSettling(ctx, f.Payer, f.Nonce, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.MarkFailed(ctx, f.Payer, f.Nonce, "0xbad", x402.ReasonSettlementReverted); err != nil {
		t.Fatal(err)
	}
	got = wantStatus(t, l, f, ledger.StatusFailed)
	if got.Reason != x402.ReasonSettlementReverted || got.TxHash != "0xbad" {
		t.Fatalf("failed row %+v", got)
	}
	if err := l.Reserve(ctx, f); !errors.Is(err, ledger.ErrAlreadyUsed) {
		t.Fatalf("Reserve after failure = %v, want ledger.ErrAlreadyUsed", err)
	}

	// A settlement that never left is released from settling, and the
	// payment may be reserved again.
	g := testEntry(3)
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
	wantStatus(t, l, g, ledger.StatusReserved)
}

func TestLedgerConcurrentReserve(t *testing.T) {
	l := mustLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	e := testEntry(7)
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
	e := testEntry(3)
	if err := l.Reserve(ctx, e); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = mustLedger(t, path)
	if err := l.Reserve(ctx, e); !errors.Is(err, ledger.ErrAlreadyUsed) {
		t.Fatalf("Reserve after reopen = %v, want ledger.ErrAlreadyUsed", err)
	}
	wantStatus(t, l, e, ledger.StatusReserved)
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

func TestLedgerWriteFailureIsUnavailable(t *testing.T) {
	ctx := context.Background()
	l := mustLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	l.Close() // every write now fails, as on a broken disk
	err := l.Reserve(ctx, testEntry(1))
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

// TestLedgerFileRemoved: SQLite goes on writing to a ledger file removed
// while open, rows nobody would read again; the ledger refuses paid calls
// instead, and does not let a settlement leave unrecorded.
func TestLedgerFileRemoved(t *testing.T) {
	ctx := context.Background()
	s := &fakeSettler{settleTx: "0x1"}
	path := filepath.Join(t.TempDir(), "ledger.db")
	g, l := newTestGateAt(t, s, path)
	pay := func() sandboxd.PaymentRequest {
		return paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), nil)))
	}
	charge, err := begin(g, ctx, pay())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	_, err = begin(g, ctx, pay())
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(err.Error(), "removed or replaced") ||
		!strings.Contains(sandboxd.ErrorMessage(err), "ledger could not record the payment") {
		t.Fatalf("Begin with the ledger removed = %v, want CodeUnavailable", err)
	}
	if out, err := charge.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); out != nil || sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Fatalf("Settle with the ledger removed = %v, %v; want CodeUnavailable", out, err)
	}
	if n := s.settles.Load(); n != 0 {
		t.Fatalf("the settler was called %d times", n)
	}
	// A new file at the path is not the ledger either.
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.Reserve(ctx, testEntry(1)); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Fatalf("Reserve with the ledger replaced = %v, want CodeUnavailable", err)
	}
}
