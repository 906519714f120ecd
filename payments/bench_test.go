package payments

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// BenchmarkVerify measures the per-request local check: decoding the
// PAYMENT-SIGNATURE header and verifying the EIP-712 signature and terms.
func BenchmarkVerify(b *testing.B) {
	req := testRequirements(b)
	h := x402test.Header(b, x402.HeaderPaymentSignature, x402test.Payload(b, x402test.Key(b), req, nil))
	b.ReportAllocs()
	for b.Loop() {
		p, err := x402.DecodePaymentHeader(h)
		if err != nil {
			b.Fatal(err)
		}
		if err := x402.Verify(req, p, x402test.Now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLedgerReserveSettle measures the three ledger writes of a paid
// call (reserve, settling, settled) on each backend: SQLite commits each
// durably (WAL, synchronous=FULL); PostgreSQL over loopback, fsync on. The
// parallel variants run one writer per GOMAXPROCS, as concurrent requests
// do. PostgreSQL runs under SANDBOXD_INTEGRATION=1.
func BenchmarkLedgerReserveSettle(b *testing.B) {
	for _, be := range ledgertest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			l := ledgertest.Open(b, ledger.Config{Ledger: be.Location(b)})
			var seq atomic.Int64
			b.ReportAllocs()
			for b.Loop() {
				reserveSettle(b, l, int(seq.Add(1)))
			}
		})
		b.Run(be.Name+"-parallel", func(b *testing.B) {
			l := ledgertest.Open(b, ledger.Config{Ledger: be.Location(b)})
			var seq atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					reserveSettle(b, l, int(seq.Add(1)))
				}
			})
		})
	}
}

// reserveSettle writes one paid call's rows: reserved, settling, settled.
func reserveSettle(b *testing.B, l *ledger.SQL, i int) {
	ctx := context.Background()
	e := ledgertest.Entry(i)
	if err := l.Reserve(ctx, e); err != nil {
		b.Fatal(err)
	}
	if err := l.MarkSettling(ctx, e.Payer, e.Nonce, nil); err != nil {
		b.Fatal(err)
	}
	if err := l.MarkSettled(ctx, e.Payer, e.Nonce, fmt.Sprintf("0x%x", i), "ok", nil); err != nil {
		b.Fatal(err)
	}
}
