package payments

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"sandboxd/payments/ledger"
)

// TestKeepAliveResolvesSilentReplicas: a live replica's background loop
// beats its heartbeat and, once another replica has been silent for longer
// than the lease, releases that one's reservation, while its own stays
// reserved. Real clock, short lease.
func TestKeepAliveResolvesSilentReplicas(t *testing.T) {
	ctx := context.Background()
	const lease = 300 * time.Millisecond
	live := mustLedgerConfig(t, ledger.Config{Ledger: filepath.Join(t.TempDir(), "ledger.db"), Replica: "live", Lease: lease})
	silent := live.As("silent", nil)
	if err := silent.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	mustOpenRows(t, silent, map[int]string{1: ledger.StatusReserved})
	mustOpenRows(t, live, map[int]string{2: ledger.StatusReserved})
	k := startKeepAlive(live, lease, &fakeSettler{}, nil)
	defer k.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := live.Get(ctx, testEntry(1).Payer, testEntry(1).Nonce)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == ledger.StatusReleased {
			if got.Replica != "live" {
				t.Fatalf("released by %q, want live", got.Replica)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the silent replica's row is still %+v after 10 s (lease %s)", got, lease)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantStatus(t, live, testEntry(2), ledger.StatusReserved)
}
