package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"
	"unicode"

	"sandboxd/x402"
)

// callCommand pays for one run over x402 and prints the answer and the
// settlement.
func callCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("call", stderr)
	keyFile := fs.String("key-file", "", "file holding the payer's hex private key (required)")
	url := fs.String("url", "http://127.0.0.1:8080/v1/code", "the service's /v1/code URL")
	code := fs.String("c", "", "the program's source (instead of FILE.py)")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	maxAmount := fs.String("max-amount", x402.DefaultClientMaxAmount, "pay at most this much per call, in asset units")
	var networks, assets listFlag
	fs.Var(&networks, "network", "a CAIP-2 network to pay on (repeatable; default "+x402.DefaultClientNetwork+")")
	fs.Var(&assets, "asset", "a token address to pay with (repeatable; default "+x402.DefaultClientAsset+", USDC on Base Sepolia)")
	payTo := fs.String("pay-to", "", "pay only this payee address (default: any)")
	maxWindow := fs.Duration("max-window", x402.DefaultClientMaxWindow, "sign authorizations valid for at most this long")
	if code, ok := parseFlags(fs, callHelp, args, stdout); !ok {
		return code
	}
	policy, err := payPolicy(*maxAmount, networks, assets, *payTo, *maxWindow)
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd call: %v\n", err)
		return 2
	}
	src, err := programSource(*code, fs.Args())
	if err != nil || *keyFile == "" {
		if err == nil {
			err = errors.New("--key-file is required")
		}
		fmt.Fprintf(stderr, "sandboxd call: %v\nusage: %s\n(sandboxd call --help says more)\n", err, callHelp.usage)
		return 2
	}
	key, err := x402.LoadKey(*keyFile)
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd call: %v\n", err)
		return 2
	}
	if w := plainHTTPWarning(*url); w != "" {
		fmt.Fprintf(stderr, "sandboxd call: warning: %s\n", w)
	}
	body, _ := json.Marshal(map[string]string{"language": "python", "code": src})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	resp, err := x402.Pay(ctx, callClient(*timeout), key, *url, body, policy)
	switch {
	case err != nil: // may quote the server's "error" field
		fmt.Fprintf(stderr, "sandboxd call: %s\n", printable(err.Error(), false))
		return 1
	}
	printAnswer(stdout, resp)
	if resp.StatusCode != http.StatusOK {
		return 1
	}
	return 0
}

// programSource returns -c's code, or the contents of the one file named.
func programSource(code string, files []string) (string, error) {
	switch {
	case code != "" && len(files) == 0:
		return code, nil
	case code == "" && len(files) == 1:
		b, err := os.ReadFile(files[0])
		return string(b), err
	}
	return "", errors.New("give the program with -c CODE or as one FILE.py")
}

// printAnswer prints the answer's JSON, indented, then what was paid. Only
// JSON keeps its lines (indented by json.Indent, each a piece of JSON, so
// none can pass for a status line); a body that is not JSON is printed on
// one line with its newlines escaped, so a server cannot forge a "paid:"
// line under it.
func printAnswer(w io.Writer, resp *x402.PaidResponse) {
	var pretty bytes.Buffer
	body := strings.TrimSpace(string(resp.Body))
	if json.Indent(&pretty, resp.Body, "", "  ") == nil {
		body = printable(string(bytes.TrimSpace(pretty.Bytes())), true)
	} else {
		body = printable(body, false)
	}
	fmt.Fprintf(w, "HTTP %d\n%s\n", resp.StatusCode, body)
	switch {
	case resp.Settlement != nil && resp.Settlement.Success:
		amount := ""
		if resp.Requirements != nil {
			amount = resp.Requirements.Amount + " atomic units of " + resp.Requirements.Asset
		}
		line := fmt.Sprintf("paid: payer %s, amount %s, network %s, transaction %s",
			resp.Settlement.Payer, amount, resp.Settlement.Network, resp.Settlement.Transaction)
		fmt.Fprintln(w, printable(line, false))
	case resp.Requirements == nil:
		fmt.Fprintln(w, "paid: nothing (the service asked for no payment)")
	default:
		fmt.Fprintln(w, "paid: nothing was settled")
	}
}

// printable escapes the control characters of text from outside (a
// server's body, its settlement fields and refusal message, a
// facilitator's reason in the ledger) before it reaches the operator's
// terminal, where escapes could retitle, clear or rewrite it, and the
// invisible format and separator characters (Unicode Cf: bidi overrides,
// zero-width ones; Zl, Zp) that could reorder or hide what is shown;
// newlines and tabs stay when multiline (an indented JSON body only).
func printable(s string, multiline bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case multiline && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case unicode.IsControl(r):
			fmt.Fprintf(&b, "\\x%02x", r)
		case unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
