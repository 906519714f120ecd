package payments

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/payments/chain"
	"sandboxd/payments/channels"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
)

// countingClaimer mines every claim and sweep, counting the claims.
type countingClaimer struct{ claims atomic.Int32 }

// claimTx is the transaction a countingClaimer reports.
var claimTx = "0x" + strings.Repeat("ab", 32)

func (c *countingClaimer) Claim(context.Context, []chain.VoucherClaim) (chain.OpReceipt, error) {
	c.claims.Add(1)
	return chain.OpReceipt{Tx: claimTx, GasUsed: 91234}, nil
}

func (c *countingClaimer) Sweep(context.Context, common.Address, common.Address) (chain.OpReceipt, error) {
	return chain.OpReceipt{Tx: claimTx, GasUsed: 40000}, nil
}

// TestClaimNowTakesTheLease: a pass run by hand runs only as the holder of
// the claimer lease: while a live replica holds it, ErrClaimerHeld and
// nothing is sent; once the holder is silent, the pass takes the lease,
// claims and sweeps, and records the pass and its operations.
func TestClaimNowTakesTheLease(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		loc := b.Location(t)
		svc := ledgertest.Open(t, ledger.Config{Ledger: loc, Replica: "svc"})
		cli := b.Sibling(t, svc, ledger.Config{Ledger: loc, Replica: "svc/ledger-claim"})
		ledgertest.Beat(t, svc, cli)
		id := mustAdopt(t, svc, testChannel(t, 1)).ID
		mustCharge(t, svc, id, 5000)
		if held, err := svc.TakeClaimer(ctx); err != nil || !held {
			t.Fatalf("the service takes the lease: %v, %v", held, err)
		}
		claimer := &countingClaimer{}
		bg := channels.NewBackground(channels.BackgroundOptions{Books: cli, Claimer: claimer})
		if _, err := claimOnce(ctx, cli, bg); !errors.Is(err, ErrClaimerHeld) || claimer.claims.Load() != 0 {
			t.Fatalf("with a live holder: %v, %d claims; want ErrClaimerHeld and none", err, claimer.claims.Load())
		}

		if _, err := ledgertest.RawDB(t, b, loc).ExecContext(ctx, `UPDATE channel_claimer SET replica = 'dead'`); err != nil {
			t.Fatal(err)
		}
		rep, err := claimOnce(ctx, cli, bg)
		if err != nil || rep.Channels != 1 || rep.Amount.Int64() != 5000 || len(rep.Claims) != 1 || rep.Sweep == nil {
			t.Fatalf("with a silent holder: %+v, %v; want one channel of 5000 claimed and swept", rep, err)
		}
		if c := mustChannel(t, svc, id); c.Claimed.Int64() != 5000 {
			t.Fatalf("claimed %s, want 5000", c.Claimed)
		}
		st, err := svc.ClaimerState(ctx)
		if err != nil || st.Replica != cli.Replica() || !st.Live || st.LastPassAt.IsZero() {
			t.Fatalf("claimer %+v, %v; want %s's, live, its pass recorded", st, err, cli.Replica())
		}
		ops, err := svc.ListOps(ctx, st.LastPassAt)
		if err != nil || len(ops) != 2 || ops[0].Kind != ledger.OpClaim || ops[0].Status != ledger.OpMined ||
			ops[0].GasUsed != 91234 || ops[1].Kind != ledger.OpSweep {
			t.Fatalf("operations %+v, %v; want the claim and the sweep, mined", ops, err)
		}
	})
}

// TestClaimNowNotOffered: ClaimNow says why when the configuration offers
// no channels, before it dials anything.
func TestClaimNowNotOffered(t *testing.T) {
	l := ledgertest.Open(t, ledger.Config{Ledger: filepath.Join(t.TempDir(), "ledger.db"), Replica: "cli"})
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "payments.channels.enabled is false"},
		{Config{Channels: channels.Config{Enabled: true}}, "payments.rpc_url is not set"},
	} {
		if _, err := ClaimNow(context.Background(), tc.cfg, l, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ClaimNow: %v, want %q", err, tc.want)
		}
	}
}
