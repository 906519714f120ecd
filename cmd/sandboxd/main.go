// Command sandboxd runs short Python programs in hardened Docker containers
// behind an HTTP API, optionally paid per call over x402.
//
//	sandboxd serve [--config FILE]   start the service
//	sandboxd version                 print the version
//	sandboxd call --key-file FILE [--url URL] [-c CODE | FILE.py]
//	                                 pay for and run one program
//	sandboxd ledger stats|list [...]   the payment ledger, for the operator
package main

import (
	"fmt"
	"io"
	"os"
	goruntime "runtime"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

const usage = `usage:
  sandboxd serve [--config FILE]     start the service (default config: ./config.yaml if present)
  sandboxd version                   print the version
  sandboxd call --key-file FILE [--url URL] [-c CODE | FILE.py]
                                     pay for one run over x402 and print the answer
  sandboxd ledger stats [--config FILE]
                                     payments by day and state (counts, sums)
  sandboxd ledger list [--config FILE] [--state S] [--since T] [--payer A] [--limit N]
                                     payments, newest first, with transaction hashes
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches a subcommand and returns the process's exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serveCommand(args[1:], stderr)
	case "call":
		return callCommand(args[1:], stdout, stderr)
	case "ledger":
		return ledgerCommand(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "sandboxd %s (commit %s, %s)\n", version, commit, goruntime.Version())
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "sandboxd: unknown command %q\n%s", args[0], usage)
	return 2
}
