package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"sandboxd/payments/ledger"
)

// ledgerUsage is what `sandboxd ledger` without a known subcommand says.
const ledgerUsage = `usage:
  sandboxd ledger stats [--config FILE]
      counts and sums (atomic units) by day and state
  sandboxd ledger list [--config FILE] [--state S] [--since T] [--payer A] [--limit N]
      rows, newest first, with transaction hashes; T is a date (2026-11-30),
      an RFC 3339 time, or a duration back from now (24h)
  sandboxd ledger sessions [--config FILE]
      a fleet's open sessions by replica and environment (never their ids)
  sandboxd ledger channels [--config FILE] [--payer A] [--state S] [--limit N]
      batch-settlement channels: balance, charged, claimed, unclaimed (atomic units)
  sandboxd ledger claim [--config FILE] [--wait D]
      claim what the channels were charged now, and print the transactions
  sandboxd ledger answers [--config FILE] [--payer A] [--state S] [--limit N] [--summary]
      the paid answers kept for retries: counts and bytes by state, then the rows

example:
  sandboxd ledger list --state settling --since 24h

Each has --help. More: docs/operating.md
`

// ledgerCommand prints the configured ledger (payments.ledger, either
// backend) for the operator.
func ledgerCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stdout, ledgerUsage)
		return 0
	}
	if len(args) > 0 && args[0] == "channels" {
		return ledgerChannelsCommand(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "claim" {
		return ledgerClaimCommand(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "answers" {
		return ledgerAnswersCommand(args[1:], stdout, stderr)
	}
	if len(args) == 0 || (args[0] != "stats" && args[0] != "list" && args[0] != "sessions") {
		fmt.Fprint(stderr, ledgerUsage)
		return 2
	}
	fs := newFlagSet("ledger "+args[0], stderr)
	h := map[string]commandHelp{"stats": ledgerStatsHelp, "list": ledgerListHelp, "sessions": ledgerSessionsHelp}[args[0]]
	state := fs.String("state", "", "only rows in this state (reserved, settling, settled, failed, released)")
	since := fs.String("since", "", "only rows reserved at or after this time")
	payer := fs.String("payer", "", "only rows of this payer address")
	limit := fs.Int("limit", 0, "at most this many rows (0: all)")
	cfg, code, ok := parseConfigFlags(fs, h, args[1:], stdout, stderr)
	if !ok {
		return code
	}
	switch *state {
	case "", ledger.StatusReserved, ledger.StatusSettling, ledger.StatusSettled, ledger.StatusFailed, ledger.StatusReleased:
	default:
		fmt.Fprintf(stderr, "sandboxd: --state: %q is not one of reserved, settling, settled, failed, released\n", *state)
		return 2
	}
	f := ledger.Filter{State: *state, Payer: *payer, Limit: *limit}
	var err error
	if f.Since, err = parseSince(*since, time.Now()); err != nil {
		fmt.Fprintf(stderr, "sandboxd: --since: %v\n", err)
		return 2
	}
	if err := printLedger(context.Background(), cfg.Payments.Ledger, args[0], f, cfg.Payments.Lease, stdout); err != nil {
		fmt.Fprintf(stderr, "sandboxd: ledger %s: %v\n", ledger.Redact(cfg.Payments.Ledger), err)
		return 1
	}
	return 0
}

// openLedger opens the ledger at location for an operator's command,
// refusing a SQLite file that is not there (opening would make one).
func openLedger(ctx context.Context, location string) (*ledger.SQL, error) {
	if err := ledgerExists(location); err != nil {
		return nil, err
	}
	return ledger.OpenAt(ctx, location)
}

// ledgerExists reports a SQLite ledger file that is not there.
func ledgerExists(location string) error {
	if !ledger.IsPostgresURL(location) {
		if _, err := os.Stat(location); err != nil {
			return fmt.Errorf("no ledger file: %w", err)
		}
	}
	return nil
}

// printLedger opens the ledger at location and prints its stats or rows.
func printLedger(ctx context.Context, location, what string, f ledger.Filter, lease time.Duration, w io.Writer) error {
	l, err := openLedger(ctx, location)
	if err != nil {
		return err
	}
	defer l.Close()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if what == "sessions" {
		return printSessions(ctx, l, lease, tw)
	}
	if what == "stats" {
		rows, err := l.Stats(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintln(tw, "DAY\tSTATE\tCOUNT\tAMOUNT")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", r.Day, r.State, r.Count, r.Amount)
		}
		return tw.Flush()
	}
	rows, err := l.List(ctx, f)
	if err != nil {
		return err
	}
	fmt.Fprintln(tw, "RESERVED\tSTATE\tPAYER\tNONCE\tAMOUNT\tTX\tRUN\tREASON\tREPLICA")
	for _, e := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Created.UTC().Format(time.RFC3339), e.Status,
			e.Payer, e.Nonce, e.Amount, dash(e.TxHash), dash(e.RunStatus), dash(e.Reason), dash(e.Replica))
	}
	return tw.Flush()
}

// printSessions prints the open sessions of the fleet by replica: how many
// in each environment, the oldest, the replica's address and whether its
// lease holds (a replica past it has its sessions ended by the others).
func printSessions(ctx context.Context, l *ledger.SQL, lease time.Duration, tw *tabwriter.Writer) error {
	rows, err := l.OpenSessions(ctx, lease)
	if err != nil {
		return err
	}
	fmt.Fprintln(tw, "REPLICA\tADDRESS\tENVIRONMENT\tOPEN\tOLDEST\tALIVE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%t\n", dash(r.Replica), dash(r.URL), dash(r.Environment), r.Open,
			r.Oldest.UTC().Format(time.RFC3339), r.Alive)
	}
	return tw.Flush()
}

// parseSince reads --since: empty, a date, an RFC 3339 time, or a
// duration back from now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a date (2026-11-30), an RFC 3339 time or a duration (24h)", s)
}

// dash stands in for an empty column, and escapes the control characters
// of a value that came from outside (a facilitator's transaction hash or
// reason), which could rewrite the operator's terminal or forge a row.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return printable(s, false)
}
