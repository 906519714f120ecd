package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"time"
)

// The helps of `sandboxd session`'s subcommands, and of the group.
var (
	sessionOpenHelp = commandHelp{
		usage: "sandboxd session open --key-file FILE [--url URL] [--language NAME] [--environment ENV]\n" +
			"              [--max-amount 0.005] [--network N] [--asset ADDR] [--pay-to ADDR] [--max-window 5m]\n" +
			"              [--scheme auto|exact|batch-settlement] [--max-deposit 0.05] [--timeout 2m]\n" +
			"              [--retries 3] [--payment-id ID]",
		what: "Open a session, paying its opening over x402, and print its id: one interpreter of --language\n" +
			"(python unless given) that keeps its state and /tmp between calls (`sandboxd call --session ID`),\n" +
			"in --environment or else the language's home environment. It signs only within the\n" +
			"limits of its flags, and refuses other terms with the reason, signing nothing. It pays through the\n" +
			"key's channel with the service when one is offered, as sandboxd call does.",
		example: "sandboxd session open --key-file payer.key --url https://sandbox.example.com/v1/sessions --environment data",
		page:    "docs/sessions.md",
	}
	sessionShowHelp = commandHelp{
		usage:   "sandboxd session show [--url URL] ID",
		what:    "Print a session's state: its environment, calls, last call, when it expires, and whether a call runs.",
		example: "sandboxd session show ses_8f0c1d2e3a4b5c6d7e8f901a2b3c4d5e",
		page:    "docs/sessions.md",
	}
	sessionCloseHelp = commandHelp{
		usage:   "sandboxd session close [--url URL] ID",
		what:    "End a session: its container is removed and its state lost. Free: the id is the capability.",
		example: "sandboxd session close ses_8f0c1d2e3a4b5c6d7e8f901a2b3c4d5e",
		page:    "docs/sessions.md",
	}
	sessionHelp = commandHelp{
		usage: "sandboxd session open|show|close [flags]",
		what: "Open a session (paid), look at it, or end it; run programs in it with `sandboxd call --session ID`.\n" +
			"Each subcommand's --help says more.",
		example: "sandboxd session open --key-file payer.key",
		page:    "docs/sessions.md",
	}
)

// defaultSessionsURL is the sessions URL of a service on this machine.
const defaultSessionsURL = "http://127.0.0.1:8080/v1/sessions"

// sessionIDPattern is what a session id may be made of: the service's are
// "ses_" and 32 hex characters; anything that could change the URL it is
// put in ("/", "?", "#", "%", "..") is refused.
var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// sessionCommand dispatches `sandboxd session`'s subcommands.
func sessionCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		sessionHelp.write(stderr, newFlagSet("session", stderr))
		return 2
	}
	switch args[0] {
	case "open":
		return sessionOpenCommand(args[1:], stdout, stderr)
	case "show":
		return sessionLookCommand(sessionShowHelp, http.MethodGet, http.StatusOK, args[1:], stdout, stderr)
	case "close":
		return sessionLookCommand(sessionCloseHelp, http.MethodDelete, http.StatusNoContent, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		sessionHelp.write(stdout, newFlagSet("session", stderr))
		return 0
	}
	fmt.Fprintf(stderr, "sandboxd session: unknown subcommand %q\n", printable(args[0], false))
	sessionHelp.write(stderr, newFlagSet("session", stderr))
	return 2
}

// sessionOpenCommand opens a session, paying for it within the flags'
// limits, and prints the answer (its id) and the settlement.
func sessionOpenCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("session open", stderr)
	url := fs.String("url", defaultSessionsURL, "the service's /v1/sessions URL")
	env := fs.String("environment", "", "the environment to open it in (default: the language's home)")
	lang := fs.String("language", "", "the session's language: python, javascript, typescript or bash, or an alias\n"+
		"(default python)")
	pf := addPayFlags(fs)
	if code, ok := parseFlags(fs, sessionOpenHelp, args, stdout); !ok {
		return code
	}
	key, policy, err := pf.load()
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd session open: %s\n", printable(err.Error(), false))
		return 2
	}
	fields := map[string]string{}
	if *lang != "" {
		fields["language"] = *lang
	}
	if *env != "" {
		fields["environment"] = *env
	}
	body, _ := json.Marshal(fields)
	return pf.pay(key, policy, payCall{url: *url, body: body, want: http.StatusCreated, name: "session open"}, stdout, stderr)
}

// sessionLookCommand sends method to the session ID's URL (show: GET,
// close: DELETE; neither is paid) and prints the answer; 0 when its status
// is want.
func sessionLookCommand(h commandHelp, method string, want int, args []string, stdout, stderr io.Writer) int {
	name := "session " + strings.ToLower(map[string]string{http.MethodGet: "show", http.MethodDelete: "close"}[method])
	fs := newFlagSet(name, stderr)
	base := fs.String("url", defaultSessionsURL, "the service's /v1/sessions URL")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	if code, ok := parseFlags(fs, h, args, stdout); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "sandboxd %s: give the session's id\nusage: %s\n", name, h.usage)
		return 2
	}
	target, err := sessionURL(*base, fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd %s: %s\n", name, printable(err.Error(), false))
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	status, body, err := send(ctx, callClient(*timeout), method, target)
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd %s: %s\n", name, printable(err.Error(), false))
		return 1
	}
	printBody(stdout, status, body)
	if status != want {
		return 1
	}
	return 0
}

// maxLookBytes bounds the answer of show and close: a session's state, or
// an error.
const maxLookBytes = 1 << 20

// send sends an unpaid request without a body and reads the answer, at
// most maxLookBytes of it.
func send(ctx context.Context, hc *http.Client, method, target string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLookBytes+1))
	if err == nil && len(body) > maxLookBytes {
		err = fmt.Errorf("the answer is over %d bytes", maxLookBytes)
	}
	return resp.StatusCode, bytes.TrimSpace(body), err
}

// sessionURL is the URL of session id under the sessions URL base.
func sessionURL(base, id string) (string, error) {
	if !sessionIDPattern.MatchString(id) {
		return "", fmt.Errorf("%q is not a session id (sandboxd session open prints one: ses_ and 32 hex characters)", id)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--url %q is not an http or https URL", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + id
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u.String(), nil
}

// sessionCodeURL is the URL of a call in session id, beside the /v1/code
// URL of `sandboxd call`: .../v1/sessions/ID/code.
func sessionCodeURL(codeURL, id string) (string, error) {
	u, err := url.Parse(codeURL)
	if err != nil || !strings.HasSuffix(u.Path, "/v1/code") {
		return "", fmt.Errorf("--session needs --url to be the service's /v1/code URL, not %q", codeURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/v1/code") + "/v1/sessions"
	sessions, err := sessionURL(u.String(), id)
	return sessions + "/code", err
}
