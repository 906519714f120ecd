package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"unicode"

	"sandboxd/x402"
	"sandboxd/x402/channel/payer"
)

// callCommand pays for one run over x402 and prints the answer and the
// settlement: a one-shot run at --url, or with --session a call in that
// session, at the sessions URL beside it.
func callCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("call", stderr)
	url := fs.String("url", "http://127.0.0.1:8080/v1/code", "the service's /v1/code URL")
	session := fs.String("session", "", "run in this session (from sandboxd session open) instead of a fresh sandbox")
	code := fs.String("c", "", "the program's source (instead of FILE)")
	lang := fs.String("language", "", "the program's language: python, javascript, typescript or bash, or an alias\n"+
		"(default python; with --session, the session's)")
	pf := addPayFlags(fs)
	if code, ok := parseFlags(fs, callHelp, args, stdout); !ok {
		return code
	}
	key, policy, err := pf.load()
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd call: %v\n", err)
		return 2
	}
	src, err := programSource(*code, fs.Args())
	if err == nil && *session != "" {
		*url, err = sessionCodeURL(*url, *session)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd call: %v\nusage: %s\n(sandboxd call --help says more)\n", err, callHelp.usage)
		return 2
	}
	body, _ := json.Marshal(callBody(*lang, *session != "", src))
	return pf.pay(key, policy, payCall{url: *url, body: body, want: http.StatusOK, name: "call"}, stdout, stderr)
}

// callBody is the body of a call of src in language lang ("" for the
// default): python for a one-shot run, the session's for a call in one
// (the field left out). The service checks the name: one place does.
func callBody(lang string, inSession bool, src string) map[string]string {
	body := map[string]string{"code": src}
	if lang == "" && !inSession {
		lang = "python"
	}
	if lang != "" {
		body["language"] = lang
	}
	return body
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
	return "", errors.New("give the program with -c CODE or as one FILE")
}

// printAnswer prints the answer's JSON, indented, then what was paid. Only
// JSON keeps its lines (indented by json.Indent, each a piece of JSON, so
// none can pass for a status line); a body that is not JSON is printed on
// one line with its newlines escaped, so a server cannot forge a "paid:"
// line under it.
func printAnswer(w io.Writer, paid *payer.Paid) {
	resp := paid.PaidResponse
	printBody(w, resp.StatusCode, resp.Body)
	switch {
	case paid.Channel != nil:
		fmt.Fprintln(w, printable(channelPaidLine(resp, paid.Channel), false))
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

// channelPaidLine says what a call paid through a channel: what the seller
// charged, the channel's running total and balance, and the deposit's
// transaction (a voucher has none: the seller claims vouchers later, in
// batches).
func channelPaidLine(resp *x402.PaidResponse, r *payer.Receipt) string {
	what, tx := "a voucher", "none (a voucher is claimed later)"
	if r.Deposit != nil {
		what = fmt.Sprintf("a deposit of %s and a voucher", r.Deposit)
	}
	if resp.Settlement != nil && resp.Settlement.Transaction != "" {
		tx = resp.Settlement.Transaction
	}
	network := ""
	if resp.Settlement != nil {
		network = resp.Settlement.Network
	}
	return fmt.Sprintf("paid: payer %s, amount %s atomic units of %s through channel %s (%s; running total %s, balance %s), "+
		"network %s, transaction %s", r.Payer.Hex(), r.Charged, resp.Requirements.Asset, r.ID.Hex(), what, r.Total, r.Balance, network, tx)
}

// printBody prints an answer's status line and its body as printAnswer
// does: JSON indented, anything else on one line, escaped.
func printBody(w io.Writer, status int, raw []byte) {
	var pretty bytes.Buffer
	body := strings.TrimSpace(string(raw))
	if json.Indent(&pretty, raw, "", "  ") == nil {
		body = printable(string(bytes.TrimSpace(pretty.Bytes())), true)
	} else {
		body = printable(body, false)
	}
	if body == "" { // 204: nothing to print but the status
		fmt.Fprintf(w, "HTTP %d\n", status)
		return
	}
	fmt.Fprintf(w, "HTTP %d\n%s\n", status, body)
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
