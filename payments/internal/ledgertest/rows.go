package ledgertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"sandboxd/payments/ledger"
	"sandboxd/x402/x402test"
)

// Entry is the i-th test payment: one payer, nonce i, the price of
// x402test's terms.
func Entry(i int) ledger.Entry {
	return ledger.Entry{
		Payer:   "0xAbCdEf0000000000000000000000000000000001",
		Nonce:   fmt.Sprintf("0x%064X", i),
		Amount:  "5000",
		Network: "eip155:84532",
		Asset:   x402test.Asset,
	}
}

// Getter reads a payment's row: a *ledger.SQL, or the ledger as package
// payments sees it.
type Getter interface {
	Get(ctx context.Context, payer, nonce string) (ledger.Entry, error)
}

// WantStatus fails unless e's row in l is in status, and returns the row.
func WantStatus(tb testing.TB, l Getter, e ledger.Entry, status string) ledger.Entry {
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

// OpenRows puts Entry(i) in the ledger in each state of states (reserved
// or settling), as a crash would leave them.
func OpenRows(tb testing.TB, l *ledger.SQL, states map[int]string) {
	tb.Helper()
	ctx := context.Background()
	for i, status := range states {
		e := Entry(i)
		if err := l.Reserve(ctx, e); err != nil {
			tb.Fatal(err)
		}
		if status == ledger.StatusSettling {
			if err := l.MarkSettling(ctx, e.Payer, e.Nonce, nil); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// Clock is a clock the test moves.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
