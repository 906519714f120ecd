package payments

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// TestGateRefusesAShortWindow: an authorization that
// expires before a run here could be settled is refused at the check, with
// a 402 naming valid_before, before any remote check or run; one valid for
// exactly the window passes.
func TestGateRefusesAShortWindow(t *testing.T) {
	s := &fakeSettler{}
	cfg := testConfig(t)
	run := RunBounds{QueueWait: 2 * time.Second, Limit: 5 * time.Second}
	window := cfg.Window(run) // 90 s
	g, err := newGateWith(cfg, options{Run: run, Settler: s, Ledger: ledgertest.OpenFile(t, cfg.Ledger), Now: func() time.Time { return x402test.Now }})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(validFor time.Duration) http.Header {
		return x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), func(a *x402.Authorization) {
			a.ValidBefore = strconv.FormatInt(x402test.Now.Add(validFor).Unix(), 10)
		}))
	}
	for _, short := range []time.Duration{6 * time.Second, 10 * time.Second, window - time.Second} {
		_, err := g.Check(context.Background(), paidRequest(sign(short)))
		wantPaymentError(t, err, x402.ReasonValidBefore, "expires too soon", "90 s")
	}
	if len(s.calls) != 0 {
		t.Fatalf("the settler was asked %v about a payment refused locally", s.calls)
	}
	if _, err := g.Check(context.Background(), paidRequest(sign(window))); err != nil {
		t.Fatalf("a payment valid for exactly the window: %v", err)
	}
}

// TestGateBoundsRemoteChecks: remote checks beyond max_checks
// wait check_wait for a slot, then get a 429 that reserved nothing.
func TestGateBoundsRemoteChecks(t *testing.T) {
	release := make(chan struct{})
	s := &fakeSettler{onCheck: func(*x402.Payment) { <-release }}
	cfg := testConfig(t)
	cfg.MaxChecks, cfg.CheckWait = 1, 50*time.Millisecond
	l := ledgertest.OpenFile(t, cfg.Ledger)
	g, err := newGateWith(cfg, options{Settler: s, Ledger: l, Now: func() time.Time { return x402test.Now }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := g.Check(context.Background(), paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), nil))))
		done <- err
	}()
	for g.checks.InUse() == 0 {
		time.Sleep(time.Millisecond)
	}
	_, err = g.Check(context.Background(), paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), nil))))
	var e *sandboxd.Error
	if sandboxd.ErrorCode(err) != sandboxd.CodeBusy || !errors.As(err, &e) || e.RetryAfter <= 0 {
		t.Fatalf("Check with the check slots full = %v, want CodeBusy with Retry-After", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rows, _ := l.Pending(context.Background()); len(rows) != 0 {
		t.Fatalf("checks reserved %d rows; only Reserve may", len(rows))
	}
}

// blockingSettler is a settler whose Settle waits for release.
type blockingSettler struct {
	fakeSettler
	entered, release chan struct{}
}

func (b *blockingSettler) Settle(ctx context.Context, p *x402.Payment) (string, error) {
	close(b.entered)
	<-b.release
	return "0x" + "11111111111111111111111111111111" + "11111111111111111111111111111111", nil
}

// TestGateCloseWaitsForSettlement: closing the gate while a
// settlement is in flight waits for it, so its outcome reaches the ledger
// before the ledger closes; and no payment is reserved once closing began.
func TestGateCloseWaitsForSettlement(t *testing.T) {
	ctx := context.Background()
	s := &blockingSettler{entered: make(chan struct{}), release: make(chan struct{})}
	path := filepath.Join(t.TempDir(), "ledger.db")
	g, l := newTestGateAt(t, s, path)
	g.closers = []io.Closer{l}
	pp := x402test.Payload(t, x402test.Key(t), g.Requirements(), nil)
	c, err := begin(g, ctx, paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, pp)))
	if err != nil {
		t.Fatal(err)
	}
	later, err := g.Check(ctx, paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), nil))))
	if err != nil {
		t.Fatal(err)
	}
	settled := make(chan error)
	go func() {
		_, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}})
		settled <- err
	}()
	<-s.entered
	closed := make(chan error)
	go func() { closed <- g.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) under a settlement in flight", err)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := later.Reserve(ctx); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Fatalf("Reserve while closing = %v, want CodeUnavailable", err)
	}
	close(s.release)
	if err := <-settled; err != nil {
		t.Fatalf("the settlement in flight: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	l2 := ledgertest.OpenFile(t, path)
	if row := ledgertest.WantStatus(t, l2, ledger.Entry{Payer: pp.Payload.Authorization.From, Nonce: pp.Payload.Authorization.Nonce}, ledger.StatusSettled); row.TxHash == "" {
		t.Fatalf("row %+v", row)
	}
}

// TestGateCloseDrainIsBounded: a settlement stuck past the drain bound
// does not hold the shutdown forever.
func TestGateCloseDrainIsBounded(t *testing.T) {
	s := &blockingSettler{entered: make(chan struct{}), release: make(chan struct{})}
	defer close(s.release)
	cfg := testConfig(t)
	l := ledgertest.OpenFile(t, cfg.Ledger)
	g, err := newGateWith(cfg, options{Settler: s, Ledger: l, Now: func() time.Time { return x402test.Now }, Drain: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c, err := begin(g, context.Background(), paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), nil))))
	if err != nil {
		t.Fatal(err)
	}
	go c.Settle(context.Background(), sandboxd.Delivered{Result: sandboxd.Result{}})
	<-s.entered
	start := time.Now()
	if err := g.Close(); err != nil || time.Since(start) > 5*time.Second {
		t.Fatalf("Close = %v after %s", err, time.Since(start))
	}
}

// TestResolverResolvesPendingRows: the gate's resolver loop takes up a
// pending settlement on its own (here under a settler that cannot tell, so
// the row ends failed for the operator), and stops when asked.
func TestResolverResolvesPendingRows(t *testing.T) {
	ctx := context.Background()
	s := &fakeSettler{settleErr: sandboxd.Errorf(sandboxd.CodeUnavailable, "chain", "no answer")}
	g, l := newTestGate(t, s)
	pp := x402test.Payload(t, x402test.Key(t), g.Requirements(), nil)
	c, err := begin(g, ctx, paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, pp)))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}})
	entry := ledger.Entry{Payer: pp.Payload.Authorization.From, Nonce: pp.Payload.Authorization.Nonce}
	wantPending(t, l, entry, out, err, "")
	resolver := g.startResolver(10 * time.Millisecond)
	defer resolver.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		row, err := l.Get(ctx, entry.Payer, entry.Nonce)
		if err == nil && row.Status == ledger.StatusFailed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("row %+v (%v) not resolved by the resolver", row, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
