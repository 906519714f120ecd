package payments

import (
	"context"
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
)

// BenchmarkChannelReserveCommit measures the two ledger writes of a paid
// voucher call (reserve the increment, commit it with its charges row) on
// each backend: SQLite commits each durably (WAL, synchronous=FULL);
// PostgreSQL over loopback, fsync on. The parallel variants run one
// writer per GOMAXPROCS, each on a channel of its own, as concurrent
// payers do. PostgreSQL runs under SANDBOXD_INTEGRATION=1.
func BenchmarkChannelReserveCommit(b *testing.B) {
	for _, be := range ledgertest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			l := ledgertest.Open(b, ledger.Config{Ledger: be.Location(b)})
			id := mustAdopt(b, l, testChannel(b, 0)).ID
			charged := new(big.Int)
			b.ReportAllocs()
			for b.Loop() {
				charged = reserveCommit(b, l, id, charged)
			}
		})
		b.Run(be.Name+"-parallel", func(b *testing.B) {
			l := ledgertest.Open(b, ledger.Config{Ledger: be.Location(b)})
			var seq atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				id := mustAdopt(b, l, testChannel(b, int(seq.Add(1)))).ID
				charged := new(big.Int)
				for pb.Next() {
					charged = reserveCommit(b, l, id, charged)
				}
			})
		})
	}
}

// reserveCommit charges one increment of 1000 on channel id, whose total is
// charged, and returns the new total.
func reserveCommit(b *testing.B, l *ledger.SQL, id string, charged *big.Int) *big.Int {
	ctx := context.Background()
	h := ledger.Hold{ID: "bench-" + charged.String(), Amount: big.NewInt(1000), Max: new(big.Int).Add(charged, big.NewInt(1000)),
		Sig: make([]byte, 65), Until: time.Now().Add(time.Minute)}
	if err := l.ReserveIncrement(ctx, id, charged, h); err != nil {
		b.Fatal(err)
	}
	c, err := l.CommitIncrement(ctx, id, h.ID, charged, "/v1/code", nil)
	if err != nil {
		b.Fatal(err)
	}
	return c.Charged
}
