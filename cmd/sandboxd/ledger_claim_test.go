package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/payments"
	"sandboxd/payments/chain"
	"sandboxd/payments/channels"
	"sandboxd/payments/ledger"
)

// claimTx is the transaction minedClaimer reports.
const claimTx = "0x00000000000000000000000000000000000000000000000000000000000c1a1d"

// minedClaimer mines every claim and sweep.
type minedClaimer struct{}

func (minedClaimer) Claim(context.Context, []chain.VoucherClaim) (chain.OpReceipt, error) {
	return chain.OpReceipt{Tx: claimTx, GasUsed: 91234}, nil
}

func (minedClaimer) Sweep(context.Context, common.Address, common.Address) (chain.OpReceipt, error) {
	return chain.OpReceipt{Tx: claimTx, GasUsed: 40000}, nil
}

// claimLedger opens a SQLite ledger as replica "svc" with one channel
// charged 5000 and not claimed; the lease's last pass is now, so that a
// claimer passes only when asked.
func claimLedger(t *testing.T) *ledger.SQL {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, ledger.Config{Ledger: filepath.Join(t.TempDir(), "ledger.db"), Replica: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	id := mustAdoptChannel(t, l, "0x00000000000000000000000000000000000000a1", 1, ledger.ChannelOpen, 1_000_000)
	mustChargeChannel(t, l, id, 5000, time.Now())
	if err := l.ClaimPassDone(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	return l
}

// background is the channels' background of l with a claimer that mines
// everything, its mirror idle.
func background(l *ledger.SQL) *channels.Background {
	return channels.NewBackground(channels.BackgroundOptions{Books: l, Claimer: minedClaimer{},
		Config: channels.Config{MirrorEvery: time.Hour}})
}

// wantClaimReport requires out to list the claim of the one channel's
// 5000 and the sweep, mined by replica.
func wantClaimReport(t *testing.T, out, replica string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "KIND") {
		t.Fatalf("report:\n%s\nwant a header, the claim and the sweep", out)
	}
	claim, sweep := strings.Fields(lines[1]), strings.Fields(lines[2])
	if strings.Join(claim, " ") != "claim mined 1 5000 91234 "+claimTx+" "+replica+" -" ||
		sweep[0] != "sweep" || sweep[1] != "mined" || sweep[4] != "40000" {
		t.Fatalf("report:\n%s\nwant the claim of 5000 on 1 channel and the sweep, mined by %s", out, replica)
	}
}

// noPass is the pass of a test in which `ledger claim` must not run one.
func noPass(t *testing.T) func(context.Context) error {
	return func(context.Context) error {
		t.Error("ran a claim pass itself while a live replica holds the lease")
		return nil
	}
}

// TestLedgerClaimWaitsForTheLiveClaimer: with a live replica holding the
// claimer lease, `ledger claim` asks it for a pass, waits for that pass
// (which its claimer runs within a second) and prints what it sent.
func TestLedgerClaimWaitsForTheLiveClaimer(t *testing.T) {
	ctx := context.Background()
	l := claimLedger(t)
	if held, err := l.TakeClaimer(ctx); err != nil || !held {
		t.Fatalf("take the lease: %v, %v", held, err)
	}
	bg := background(l)
	bg.Start()
	defer bg.Close()
	var out bytes.Buffer
	if err := askClaim(ctx, l.As("svc/ledger-claim", nil), 10*time.Second, noPass(t), &out); err != nil {
		t.Fatal(err)
	}
	wantClaimReport(t, out.String(), "svc")
}

// TestLedgerClaimTimesOut: a live holder that runs no pass within --wait
// is an error naming it; the request stands for its next pass.
func TestLedgerClaimTimesOut(t *testing.T) {
	ctx := context.Background()
	l := claimLedger(t)
	if held, err := l.TakeClaimer(ctx); err != nil || !held {
		t.Fatalf("take the lease: %v, %v", held, err)
	}
	err := askClaim(ctx, l.As("svc/ledger-claim", nil), 300*time.Millisecond, noPass(t), new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "no claim pass within 300ms") || !strings.Contains(err.Error(), "svc") {
		t.Fatalf("waiting for a pass that never comes: %v", err)
	}
	if st, err := l.ClaimerState(ctx); err != nil || !st.RequestedAt.After(st.LastPassAt) {
		t.Fatalf("claimer %+v, %v; want the request standing", st, err)
	}
}

// TestLedgerClaimRunsThePassItself: `ledger claim` runs the pass itself
// when no live replica holds the lease (a silent one does, or its own
// replica from an earlier run), and waits for the live replica that took
// the lease first when the pass says so.
func TestLedgerClaimRunsThePassItself(t *testing.T) {
	ctx := context.Background()
	for _, holder := range []string{"dead", "svc/ledger-claim"} {
		t.Run(holder, func(t *testing.T) {
			l := claimLedger(t)
			cli := l.As("svc/ledger-claim", nil)
			if err := cli.Heartbeat(ctx); err != nil {
				t.Fatal(err)
			}
			if held, err := l.As(holder, nil).TakeClaimer(ctx); err != nil || !held {
				t.Fatalf("%s takes the lease: %v, %v", holder, held, err)
			}
			passes := 0
			pass := func(ctx context.Context) error {
				passes++
				_, err := background(cli).ClaimPass(ctx)
				return err
			}
			var out bytes.Buffer
			if err := askClaim(ctx, cli, time.Second, pass, &out); err != nil || passes != 1 {
				t.Fatalf("%v after %d passes, want one", err, passes)
			}
			wantClaimReport(t, out.String(), cli.Replica())
		})
	}
	t.Run("taken first", func(t *testing.T) {
		l := claimLedger(t)
		if held, err := l.As("dead", nil).TakeClaimer(ctx); err != nil || !held {
			t.Fatalf("take the lease: %v, %v", held, err)
		}
		bg := background(l)
		defer bg.Close()
		pass := func(ctx context.Context) error {
			// The live replica takes the lease first, then passes.
			if held, err := l.TakeClaimer(ctx); err != nil || !held {
				t.Errorf("the service takes the lease: %v, %v", held, err)
			}
			bg.Start()
			return payments.ErrClaimerHeld
		}
		var out bytes.Buffer
		if err := askClaim(ctx, l.As("svc/ledger-claim", nil), 10*time.Second, pass, &out); err != nil {
			t.Fatal(err)
		}
		wantClaimReport(t, out.String(), "svc")
	})
}

// TestLedgerClaimCommand: `sandboxd ledger claim` refuses a bad --wait and
// a missing ledger file, and with no live claimer and payments off says
// that it cannot claim itself.
func TestLedgerClaimCommand(t *testing.T) {
	location := filepath.Join(t.TempDir(), "ledger.db")
	cfg := writeConfig(t, fmt.Sprintf("payments:\n  ledger: %q\n", location))
	claim := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"ledger", "claim", "--config", cfg}, args...), &out, &errb)
		return code, errb.String()
	}
	if code, errs := claim("--wait", "0s"); code != 2 {
		t.Fatalf("--wait 0s: exit %d %s", code, errs)
	}
	if code, errs := claim(); code != 1 || !strings.Contains(errs, "no ledger file") {
		t.Fatalf("missing file: exit %d %s", code, errs)
	}
	seedChannels(t, location)
	if code, errs := claim(); code != 1 || !strings.Contains(errs, "payments.enabled is false") {
		t.Fatalf("payments off: exit %d %s", code, errs)
	}
}
