// Command sandboxd runs short Python programs in hardened Docker containers
// behind an HTTP API, optionally paid per call over x402.
//
//	sandboxd serve [--config FILE]   start the service
//	sandboxd version                 print the version
//	sandboxd call --key-file FILE [--url URL] [--language NAME] [-c CODE | FILE]
//	                                 pay for and run one program
//	sandboxd session open|show|close [...]
//	                                 a session: one interpreter kept across calls
//	sandboxd channel show|refund [...]
//	                                 the payment channels call pays through
//	sandboxd ledger stats|list|sessions|channels|claim|answers [...]
//	                                 the payment ledger, for the operator
//
// Each command's --help says what it does, with an example, and names the
// page of docs/ that says more.
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
		return serveCommand(args[1:], stdout, stderr)
	case "call":
		return callCommand(args[1:], stdout, stderr)
	case "ledger":
		return ledgerCommand(args[1:], stdout, stderr)
	case "session":
		return sessionCommand(args[1:], stdout, stderr)
	case "channel":
		return channelCommand(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		return versionCommand(args[1:], stdout, stderr)
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "sandboxd: unknown command %q\n%s", args[0], usage)
	return 2
}

// versionCommand prints the version, the commit and the Go version.
func versionCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", stderr)
	if code, ok := parseFlags(fs, versionHelp, args, stdout); !ok {
		return code
	}
	fmt.Fprintf(stdout, "sandboxd %s (commit %s, %s)\n", version, commit, goruntime.Version())
	return 0
}
