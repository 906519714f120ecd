package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"sandboxd/payments/ledger"
)

// ledgerAnswersCommand prints the answers the configured ledger (either
// backend) keeps for retries: a summary by state, then the rows, never
// their bytes.
func ledgerAnswersCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("ledger answers", stderr)
	payer := fs.String("payer", "", "only the answers of this payer address")
	state := fs.String("state", "", "only answers in this state (running, held, pending, ready)")
	limit := fs.Int("limit", 0, "at most this many answers (0: all)")
	summary := fs.Bool("summary", false, "print the summary by state only")
	cfg, code, ok := parseConfigFlags(fs, ledgerAnswersHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	switch *state {
	case "", ledger.AnswerRunning, ledger.AnswerHeld, ledger.AnswerPending, ledger.AnswerReady:
	default:
		fmt.Fprintf(stderr, "sandboxd: --state: %q is not one of running, held, pending, ready\n", *state)
		return 2
	}
	f := ledger.AnswerFilter{Payer: *payer, State: *state, Limit: *limit}
	if *summary {
		f.Limit = -1
	}
	budget := int64(cfg.retriesConfig().MaxBytes)
	if err := listAnswers(context.Background(), cfg.Payments.Ledger, f, budget, stdout); err != nil {
		fmt.Fprintf(stderr, "sandboxd: ledger %s: %v\n", ledger.Redact(cfg.Payments.Ledger), err)
		return 1
	}
	return 0
}

// listAnswers opens the ledger at location and prints the summary of its
// answers against budget (payments.retries.max_bytes) and, unless f.Limit
// is negative, the rows f selects.
func listAnswers(ctx context.Context, location string, f ledger.AnswerFilter, budget int64, w io.Writer) error {
	l, err := openLedger(ctx, location)
	if err != nil {
		return err
	}
	defer l.Close()
	stats, err := l.AnswerStats(ctx)
	if err != nil {
		return err
	}
	if err := printAnswerStats(stats, budget, w); err != nil || f.Limit < 0 {
		return err
	}
	rows, err := l.ListAnswers(ctx, f)
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	return printAnswers(rows, w)
}

// printAnswerStats prints the answers by state and their total, the bytes
// kept against the budget.
func printAnswerStats(stats []ledger.AnswerStatsRow, budget int64, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATE\tANSWERS\tKEPT BYTES\tANSWER BYTES\tTOO LARGE\tEVICTED\tEXPIRED")
	var total ledger.AnswerStatsRow
	for _, s := range stats {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", s.State, s.Count, s.BodyBytes, s.AnswerBytes, s.TooLarge,
			s.Evicted, s.Expired)
		total.Count, total.BodyBytes, total.AnswerBytes = total.Count+s.Count, total.BodyBytes+s.BodyBytes,
			total.AnswerBytes+s.AnswerBytes
		total.TooLarge, total.Evicted, total.Expired = total.TooLarge+s.TooLarge, total.Evicted+s.Evicted,
			total.Expired+s.Expired
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t%d\t%d\n", total.Count, total.BodyBytes, total.AnswerBytes,
		total.TooLarge, total.Evicted, total.Expired)
	if err := tw.Flush(); err != nil {
		return err
	}
	pct := 0.0
	if budget > 0 {
		pct = 100 * float64(total.BodyBytes) / float64(budget)
	}
	_, err := fmt.Fprintf(w, "kept bytes: %d of payments.retries.max_bytes %d (%.1f%%)\n", total.BodyBytes, budget, pct)
	return err
}

// printAnswers prints rows as a table: whose answer, to which payment (the
// key's first 10 characters, the id's first 8), what and where for, its
// state and sizes; never the answer.
func printAnswers(rows []ledger.AnswerMeta, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CREATED\tPAYER\tKEY\tID\tKIND\tTRANSPORT\tSTATE\tKEPT\tSIZE\tDROPPED\tEXPIRES")
	for _, a := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", stampOrDash(a.Created), dash(a.Payer),
			dash(a.Key[:min(10, len(a.Key))]), dash(a.ID[:min(8, len(a.ID))]), a.Kind, a.Transport, a.State,
			a.BodyBytes, a.AnswerBytes, dash(a.Dropped), stampOrDash(a.Expires))
	}
	return tw.Flush()
}
