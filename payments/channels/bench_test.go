package channels

import (
	"context"
	"testing"

	"sandboxd"
)

// BenchmarkVoucherCall measures the seller's own work for one voucher
// call over in-memory fakes (no ledger, no chain): Check (decode, the
// accepted entry, the config, the signature's recovery, the row, the
// total), Reserve and Settle. The voucher is signed outside the timer.
func BenchmarkVoucherCall(b *testing.B) {
	h := newHarness(b, 0)
	h.open(b, 1_000_000_000_000, 0)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		v := h.voucher(b, int64(i+1)*price.Int64())
		b.StartTimer()
		a, _, err := h.check(v)
		if err != nil {
			b.Fatal(err)
		}
		c, err := a.Reserve(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}}); err != nil {
			b.Fatal(err)
		}
	}
}
