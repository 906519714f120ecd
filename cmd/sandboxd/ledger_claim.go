package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"text/tabwriter"
	"time"

	"sandboxd/payments"
	"sandboxd/payments/ledger"
)

// defaultClaimWait is how long `ledger claim` waits, by default, for the
// pass of the replica that holds the claimer lease.
const defaultClaimWait = 2 * time.Minute

// claimReplicaSuffix is added to the replica id of `ledger claim`: a
// process of its own in the fleet, apart from the service on its host.
const claimReplicaSuffix = "/ledger-claim"

// claimPoll is how often `ledger claim` rereads the claimer's state while
// it waits (the claimer looks every second).
const claimPoll = 200 * time.Millisecond

// ledgerClaimCommand asks for a claim pass of the channels now and prints
// the transactions it sent.
func ledgerClaimCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("ledger claim", stderr)
	wait := fs.Duration("wait", defaultClaimWait, "how long to wait for the pass of the replica holding the claimer lease")
	cfg, code, ok := parseConfigFlags(fs, ledgerClaimHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	if *wait <= 0 {
		fmt.Fprintf(stderr, "sandboxd: --wait: %s is not a positive duration\n", *wait)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	pc := cfg.paymentsConfig()
	pc.ReplicaID += claimReplicaSuffix
	if err := claimCommand(ctx, cfg.Payments.Enabled, pc, *wait, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "sandboxd: ledger claim %s: %v\n", ledger.Redact(pc.Ledger), err)
		return 1
	}
	return 0
}

// claimCommand opens the ledger of pc as its replica and claims (askClaim),
// running a pass itself through payments.ClaimNow when it must.
func claimCommand(ctx context.Context, enabled bool, pc payments.Config, wait time.Duration, stdout, stderr io.Writer) error {
	if err := ledgerExists(pc.Ledger); err != nil {
		return err
	}
	l, err := ledger.Open(ctx, ledger.Config{Ledger: pc.Ledger, Replica: pc.ReplicaID, Lease: pc.Lease})
	if err != nil {
		return err
	}
	defer l.Close()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	pass := func(ctx context.Context) error {
		if !enabled {
			return errors.New("no live replica holds the claimer lease, and payments.enabled is false here: " +
				"this command claims with the settlement the service is configured with")
		}
		_, err := payments.ClaimNow(ctx, pc, l, log)
		return err
	}
	return askClaim(ctx, l, wait, pass, stdout)
}

// askClaim asks for a claim pass on l and prints the channel operations
// it sent. When a live replica other than l's holds the claimer lease, it
// waits up to wait for that replica's next pass to end; when none does (or
// the holder falls silent meanwhile) it runs the pass itself through pass,
// which returns payments.ErrClaimerHeld when another replica took the
// lease first (it then waits for that one).
func askClaim(ctx context.Context, l *ledger.SQL, wait time.Duration, pass func(context.Context) error, w io.Writer) error {
	if err := l.RequestClaim(ctx); err != nil {
		return err
	}
	st, err := l.ClaimerState(ctx)
	if err != nil {
		return err
	}
	asked, deadline := st.RequestedAt, time.Now().Add(wait)
	for {
		if !st.LastPassAt.Before(asked) {
			// The pass that served the request began at LastPassAt, on the
			// clock that stamped its operations.
			return printOps(ctx, l, st.LastPassAt, w)
		}
		if !st.Live || st.Replica == l.Replica() {
			began := time.Now()
			err := pass(ctx)
			if !errors.Is(err, payments.ErrClaimerHeld) {
				return errors.Join(err, printOps(ctx, l, began, w))
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no claim pass within %s: replica %s holds the claimer lease and has not run one "+
				"(its log says why); the request stands, and its next pass serves it", wait, st.Replica)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(claimPoll):
		}
		if st, err = l.ClaimerState(ctx); err != nil {
			return err
		}
	}
}

// printOps prints the channel operations recorded since since.
func printOps(ctx context.Context, l *ledger.SQL, since time.Time, w io.Writer) error {
	ops, err := l.ListOps(ctx, since)
	if err != nil {
		return err
	}
	if len(ops) == 0 {
		_, err := fmt.Fprintln(w, "claim pass done: no channel was charged beyond what was claimed")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tSTATUS\tCHANNELS\tAMOUNT\tGAS\tTX\tREPLICA\tREASON")
	for _, op := range ops {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\n", op.Kind, op.Status, op.Channels, orZero(op.Amount),
			op.GasUsed, dash(op.TxHash), dash(op.Replica), dash(op.Reason))
	}
	return tw.Flush()
}
