package main

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"strings"
	"text/tabwriter"
	"time"

	"sandboxd/payments/ledger"
)

// ledgerChannelsCommand prints the batch-settlement channels of the
// configured ledger (either backend) for the operator.
func ledgerChannelsCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("ledger channels", stderr)
	payer := fs.String("payer", "", "only the channels of this payer address")
	state := fs.String("state", "", "only channels in this state (open, refunding, closed)")
	limit := fs.Int("limit", 0, "at most this many channels (0: all)")
	cfg, code, ok := parseConfigFlags(fs, ledgerChannelsHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	switch *state {
	case "", ledger.ChannelOpen, ledger.ChannelRefunding, ledger.ChannelClosed:
	default:
		fmt.Fprintf(stderr, "sandboxd: --state: %q is not one of open, refunding, closed\n", *state)
		return 2
	}
	f := ledger.ChannelFilter{Payer: *payer, State: *state, Limit: *limit}
	if err := listChannels(context.Background(), cfg.Payments.Ledger, f, stdout); err != nil {
		fmt.Fprintf(stderr, "sandboxd: ledger %s: %v\n", ledger.Redact(cfg.Payments.Ledger), err)
		return 1
	}
	return 0
}

// listChannels opens the ledger at location and prints the channels f
// selects.
func listChannels(ctx context.Context, location string, f ledger.ChannelFilter, w io.Writer) error {
	l, err := openLedger(ctx, location)
	if err != nil {
		return err
	}
	defer l.Close()
	rows, err := l.ListChannels(ctx, f)
	if err != nil {
		return err
	}
	return printChannels(rows, w)
}

// printChannels prints rows as a table, amounts in atomic units.
func printChannels(rows []ledger.Channel, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tPAYER\tSTATE\tBALANCE\tCHARGED\tCLAIMED\tUNCLAIMED\tWITHDRAWAL\tCALLS\tLAST CHARGE")
	for _, c := range rows {
		charged, claimed := orZero(c.Charged), orZero(c.Claimed)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", c.ID[:min(10, len(c.ID))],
			strings.ToLower(c.Config.Payer.Hex()), c.State, orZero(c.Balance), charged, claimed,
			new(big.Int).Sub(charged, claimed), withdrawal(c), c.Calls, stampOrDash(c.LastChargedAt))
	}
	return tw.Flush()
}

// withdrawal is the withdrawal the payer began on the escrow, as the
// mirror last read it: its amount and when it began, or "-".
func withdrawal(c ledger.Channel) string {
	if c.WithdrawAt == 0 {
		return "-"
	}
	return orZero(c.WithdrawAmount).String() + "@" + time.Unix(c.WithdrawAt, 0).UTC().Format(time.RFC3339)
}

// orZero is n, or 0 for nil.
func orZero(n *big.Int) *big.Int {
	if n == nil {
		return new(big.Int)
	}
	return n
}

// stampOrDash is t in RFC 3339 (UTC), or "-" for the zero time.
func stampOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
