package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// commandHelp is what a subcommand's --help says: its usage line, what it does,
// one example, and the page of docs/ that says more. A reader who typed --help
// wants to know where to go next, so every help names its page.
type commandHelp struct {
	usage   string
	what    string
	example string
	page    string
}

// The subcommands' helps, by the name their flag set is given.
var (
	serveHelp = commandHelp{
		usage: "sandboxd serve [--config FILE]",
		what: "Start the service: the HTTP API, the MCP tool and the try-it page, on server.addr (:8080),\n" +
			"until SIGINT or SIGTERM. Every key of the configuration can be overridden by SANDBOX_<SECTION>_<KEY>.",
		example: "SANDBOX_RUNTIME_TIMEOUT=3s sandboxd serve --config config.yaml",
		page:    "docs/operating.md",
	}
	callHelp = commandHelp{
		usage: "sandboxd call --key-file FILE [--url URL] [--language NAME] [--session ID] [--max-amount 0.005]\n" +
			"              [--network N] [--asset ADDR] [--pay-to ADDR] [--max-window 5m]\n" +
			"              [--scheme auto|exact|batch-settlement] [--max-deposit 0.05] [--timeout 2m] [--retries 3]\n" +
			"              [--payment-id ID] (-c CODE | FILE)",
		what: "Pay for one run over x402 and print the answer and the settlement. It signs only within the\n" +
			"limits of its flags, and refuses other terms with the reason, signing nothing. When the service\n" +
			"offers a batch-settlement channel (and --scheme is auto, the default), it pays through one: a deposit\n" +
			"of at most --max-deposit the first time, then a voucher per call, the running totals kept in\n" +
			"FILE.channels (sandboxd channel show|refund). With --session ID the program runs in that session\n" +
			"(sandboxd session open; docs/sessions.md), at .../v1/sessions/ID/code beside --url, and its answer\n" +
			"adds result and session. --language names the program's language (python unless given; in a\n" +
			"session, the session's): the file's extension is not looked at. An answer lost on the way is asked for again with the same payment, at\n" +
			"most --retries times; a failed call prints its payment id, for --payment-id to fetch it again.",
		example: "sandboxd call --key-file payer.key --url https://sandbox.example.com/v1/code -c 'print(6*7)'",
		page:    "docs/payments.md",
	}
	channelShowHelp = commandHelp{
		usage: "sandboxd channel show --key-file FILE [--url URL]",
		what: "Print the batch-settlement channels sandboxd call paid through with the key in FILE, as kept in\n" +
			"FILE.channels: each one's server, network, asset, running total charged, balance and what is unspent.",
		example: "sandboxd channel show --key-file payer.key",
		page:    "docs/payments.md",
	}
	channelRefundHelp = commandHelp{
		usage: "sandboxd channel refund --key-file FILE --url URL [--timeout 2m]",
		what: "Ask the service at URL for what is left of the key's channel with it (its balance less what was\n" +
			"charged): a refund request, the zero-charge voucher of the running total, sent to its /v1/channel.\n" +
			"It prints the amount refunded and marks the channel refunded in FILE.channels; a later call reopens it.",
		example: "sandboxd channel refund --key-file payer.key --url https://sandbox.example.com",
		page:    "docs/payments.md",
	}
	channelHelp = commandHelp{
		usage:   "sandboxd channel show|refund [flags]",
		what:    "Look at the key's batch-settlement channels, or take back what is left of one. Each subcommand's --help says more.",
		example: "sandboxd channel show --key-file payer.key",
		page:    "docs/payments.md",
	}
	ledgerStatsHelp = commandHelp{
		usage:   "sandboxd ledger stats [--config FILE]",
		what:    "Print the payments of payments.ledger (SQLite or PostgreSQL) by day and state: counts and sums.",
		example: "sandboxd ledger stats --config config.yaml",
		page:    "docs/operating.md",
	}
	ledgerListHelp = commandHelp{
		usage: "sandboxd ledger list [--config FILE] [--state S] [--since T] [--payer A] [--limit N]",
		what: "Print the payments of payments.ledger, newest first, with transaction hashes and the replica\n" +
			"that held each. T is a date (2026-11-30), an RFC 3339 time, or a duration back from now (24h).",
		example: "sandboxd ledger list --state settling --since 24h",
		page:    "docs/operating.md",
	}
	ledgerSessionsHelp = commandHelp{
		usage: "sandboxd ledger sessions [--config FILE]",
		what: "Print the open sessions of a fleet (the registry in payments.ledger) by replica and environment:\n" +
			"how many, the oldest, the replica's server.advertise_url and whether its lease holds. Ids are never stored.",
		example: "sandboxd ledger sessions --config config.yaml",
		page:    "docs/operating.md",
	}
	ledgerChannelsHelp = commandHelp{
		usage: "sandboxd ledger channels [--config FILE] [--payer A] [--state S] [--limit N]",
		what: "Print the batch-settlement channels of payments.ledger, newest first: the first 10 characters of each\n" +
			"id, its payer and state, and in atomic units its balance on the escrow, what was charged, what was\n" +
			"claimed and what is not yet (charged - claimed); a withdrawal the payer began (amount@when), the calls\n" +
			"charged and the last charge. S is open, refunding or closed.",
		example: "sandboxd ledger channels --state open",
		page:    "docs/operating.md",
	}
	ledgerClaimHelp = commandHelp{
		usage: "sandboxd ledger claim [--config FILE] [--wait D]",
		what: "Claim now what the channels were charged, and sweep it to payments.pay_to. When a live replica\n" +
			"holds the fleet's claimer lease, it asks that replica for a pass and waits for it (up to D); otherwise\n" +
			"it takes the lease and runs the pass itself, with the relayer key or the facilitator the service uses.\n" +
			"It prints the transactions the pass sent: kind, status, channels, amount, gas, hash.",
		example: "sandboxd ledger claim --wait 5m",
		page:    "docs/operating.md",
	}
	ledgerAnswersHelp = commandHelp{
		usage: "sandboxd ledger answers [--config FILE] [--payer A] [--state S] [--limit N] [--summary]",
		what: "Print the paid answers payments.ledger keeps for their payers' retries (payments.retries): by state,\n" +
			"how many, the bytes kept against payments.retries.max_bytes, the answers' sizes, how many lost their\n" +
			"bytes (too large, evicted) and how many expired awaiting a sweep; then the rows, newest first: payer,\n" +
			"payment key and id (their first characters), kind, transport, state, sizes. Never an answer's bytes.\n" +
			"S is running, held, pending or ready. A SQLite ledger is read with the service stopped.",
		example: "sandboxd ledger answers --summary",
		page:    "docs/operating.md",
	}
	versionHelp = commandHelp{
		usage:   "sandboxd version",
		what:    "Print the version, the commit and the Go version it was built with.",
		example: "sandboxd version",
		page:    "docs/operating.md",
	}
)

// write prints the help to w, with the flags of fs when it has any.
func (h commandHelp) write(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n\nexample:\n  %s\n", h.usage, h.what, h.example)
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprintln(w, "\nflags:")
		out := fs.Output()
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(out)
	}
	fmt.Fprintf(w, "\nmore: %s\n", h.page)
}

// newFlagSet is a subcommand's flag set, reporting bad flags on stderr; its
// help is printed by parseFlags.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // parseFlags prints the help, to the stream it belongs on
	return fs
}

// parseFlags parses args into fs. It returns the exit code to end with and
// false when the command must not go on: 0 after -h or --help (h printed to
// stdout, as asked for), 2 after a bad flag (flag's message and h on stderr).
func parseFlags(fs *flag.FlagSet, h commandHelp, args []string, stdout io.Writer) (int, bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		h.write(stdout, fs)
		return 0, false
	}
	h.write(fs.Output(), fs)
	return 2, false
}

// parseConfigFlags adds --config to fs, parses args into it (as
// parseFlags) and loads the configuration --config names. It returns the
// exit code to end with and false when the command must not go on: a
// configuration that does not load is a usage error (2), reported on
// stderr.
func parseConfigFlags(fs *flag.FlagSet, h commandHelp, args []string, stdout, stderr io.Writer) (Config, int, bool) {
	path := fs.String("config", "", "configuration file (default ./config.yaml when present)")
	if code, ok := parseFlags(fs, h, args, stdout); !ok {
		return Config{}, code, false
	}
	cfg, err := LoadConfig(*path)
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd: %v\n", err)
		return Config{}, 2, false
	}
	return cfg, 0, true
}

// usage is the top-level help of sandboxd.
const usage = `sandboxd runs short Python programs in hardened Docker containers behind an HTTP API and an MCP
tool, free or paid per call over x402.

usage:
  sandboxd serve [--config FILE]     start the service (default config: ./config.yaml if present)
  sandboxd call --key-file FILE [--url URL] [--language NAME] [-c CODE | FILE]
                                     pay for one run over x402 and print the answer
  sandboxd session open|show|close [...]
                                     a session: one interpreter that keeps its state across calls
  sandboxd channel show|refund --key-file FILE [...]
                                     the payment channels sandboxd call pays through
  sandboxd ledger stats [--config FILE]
                                     payments by day and state (counts, sums)
  sandboxd ledger list [--config FILE] [--state S] [--since T] [--payer A] [--limit N]
                                     payments, newest first, with transaction hashes
  sandboxd ledger channels|claim [--config FILE] [...]
                                     the channels paid through; claim what they were charged now
  sandboxd ledger answers [--config FILE] [...]
                                     the paid answers kept for retries: counts, bytes, rows
  sandboxd version                   print the version

example:
  sandboxd serve
  curl -s localhost:8080/v1/code -d '{"code":"print(6*7)"}'

Each command's --help says more. More: README.md, and docs/ (docs/api.md for the API).
`
