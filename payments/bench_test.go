package payments

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkVerify measures the per-request local check: decoding the
// PAYMENT-SIGNATURE header and verifying the EIP-712 signature and terms.
func BenchmarkVerify(b *testing.B) {
	req := testRequirements(b)
	h := mustHeader(b, HeaderPaymentSignature, mustPayload(b, mustKey(b), req, nil))
	b.ReportAllocs()
	for b.Loop() {
		p, err := DecodePaymentHeader(h)
		if err != nil {
			b.Fatal(err)
		}
		if err := Verify(req, p, testNow); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLedgerReserveSettle measures the two ledger writes of a paid
// call (each a durable SQLite commit in WAL mode with synchronous=FULL).
func BenchmarkLedgerReserveSettle(b *testing.B) {
	ctx := context.Background()
	l := mustLedger(b, filepath.Join(b.TempDir(), "ledger.db"))
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		e := testEntry(i)
		if err := l.Reserve(ctx, e); err != nil {
			b.Fatal(err)
		}
		if err := l.MarkSettled(ctx, e.Payer, e.Nonce, fmt.Sprintf("0x%x", i), "ok"); err != nil {
			b.Fatal(err)
		}
	}
}
