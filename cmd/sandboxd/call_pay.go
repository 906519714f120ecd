package main

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"sandboxd/x402"
	"sandboxd/x402/channel/payer"
)

// payFlags are the flags of every command that pays (call, session open):
// the payer's key, the limits it signs within, the schemes it pays with,
// the time it waits, and how it asks again for an answer lost on the way.
type payFlags struct {
	keyFile, maxAmount, payTo, scheme, maxDeposit, paymentID *string
	networks, assets                                         listFlag
	maxWindow, timeout                                       *time.Duration
	retries                                                  *int
}

// addPayFlags defines the paying flags on fs.
func addPayFlags(fs *flag.FlagSet) *payFlags {
	p := &payFlags{}
	p.keyFile = fs.String("key-file", "", "file holding the payer's hex private key (required)")
	p.timeout = fs.Duration("timeout", 2*time.Minute, "give up after this long")
	p.maxAmount = fs.String("max-amount", x402.DefaultClientMaxAmount, "pay at most this much per call, in asset units")
	fs.Var(&p.networks, "network", "a CAIP-2 network to pay on (repeatable; default "+x402.DefaultClientNetwork+")")
	fs.Var(&p.assets, "asset", "a token address to pay with (repeatable; default "+x402.DefaultClientAsset+", USDC on Base Sepolia)")
	p.payTo = fs.String("pay-to", "", "pay only this payee address (default: any)")
	p.maxWindow = fs.Duration("max-window", x402.DefaultClientMaxWindow, "sign authorizations valid for at most this long")
	p.scheme = fs.String("scheme", string(payer.SchemeAuto), "pay through a channel when offered (auto), each call apart (exact), or through channels only (batch-settlement)")
	p.maxDeposit = fs.String("max-deposit", "", fmt.Sprintf("deposit at most this much into a channel at once, in asset units "+
		"(default %d x --max-amount: %s)", payer.DepositMultiple, x402.FormatPrice(payer.DefaultMaxDeposit(x402.DefaultPayPolicy().MaxAmount))))
	p.paymentID = fs.String("payment-id", "", "the payment id sent when the service declares payment-identifier, 16-128 "+
		"characters of A-Z a-z 0-9 _ - (default: a new one; a failed call prints it, to fetch its answer again)")
	p.retries = fs.Int("retries", x402.DefaultRetries, fmt.Sprintf("ask again this many times, with the same payment, "+
		"for an answer lost on the way (0..%d)", x402.MaxRetries))
	return p
}

// load reads the key and builds the policy from the flags; its errors are
// the operator's (exit 2).
func (p *payFlags) load() (*ecdsa.PrivateKey, payer.Policy, error) {
	exact, err := payPolicy(*p.maxAmount, p.networks, p.assets, *p.payTo, *p.maxWindow)
	policy := payer.Policy{PayPolicy: exact}
	if err != nil {
		return nil, policy, err
	}
	if policy.Scheme, err = payer.ParseScheme(*p.scheme); err != nil {
		return nil, policy, fmt.Errorf("--scheme: %w", err)
	}
	policy.MaxDeposit = payer.DefaultMaxDeposit(exact.MaxAmount)
	if *p.maxDeposit != "" {
		if policy.MaxDeposit, err = x402.ParsePrice(*p.maxDeposit); err != nil {
			return nil, policy, fmt.Errorf("--max-deposit: %w", err)
		}
	}
	if policy.Resend, err = p.resend(); err != nil {
		return nil, policy, err
	}
	if *p.keyFile == "" {
		return nil, policy, errors.New("--key-file is required")
	}
	key, err := x402.LoadKey(*p.keyFile)
	return key, policy, err
}

// resend is the payment id and retries of the flags: --payment-id, else a
// new id for this invocation.
func (p *payFlags) resend() (x402.Resend, error) {
	r := x402.Resend{PaymentID: *p.paymentID, Retries: *p.retries}
	if r.Retries < 0 || r.Retries > x402.MaxRetries {
		return r, fmt.Errorf("--retries %d is not between 0 and %d", r.Retries, x402.MaxRetries)
	}
	if r.PaymentID == "" {
		r.PaymentID = x402.NewPaymentID()
	} else if !x402.ValidPaymentID(r.PaymentID) {
		return r, fmt.Errorf("--payment-id %q is not 16-128 characters of A-Z a-z 0-9 _ -", r.PaymentID)
	}
	return r, nil
}

// payCall is one paid POST: its URL and JSON body, the status that means
// success, and the command's name for its messages.
type payCall struct {
	url  string
	body []byte
	want int
	name string
}

// pay POSTs c's body, pays within policy when the server asks (payer.Pay:
// through a channel kept beside the key file, or exact; terms outside the
// policy are refused before anything is signed), prints the answer and
// what was paid, and returns the exit code: 0 when the answer has c's
// status.
func (p *payFlags) pay(key *ecdsa.PrivateKey, policy payer.Policy, c payCall, stdout, stderr io.Writer) int {
	if w := plainHTTPWarning(c.url); w != "" {
		fmt.Fprintf(stderr, "sandboxd %s: warning: %s\n", c.name, w)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *p.timeout)
	defer cancel()
	note := func(s string) { fmt.Fprintf(stderr, "sandboxd %s: note: %s\n", c.name, printable(s, false)) }
	policy.Resend.Note = note
	resp, err := payer.Pay(ctx, callClient(*p.timeout), key, payer.StatePath(*p.keyFile), c.url, c.body, policy)
	if err != nil { // may quote the server's "error" field
		fmt.Fprintf(stderr, "sandboxd %s: %s\n", c.name, printable(err.Error(), false))
		return 1
	}
	printAnswer(stdout, resp)
	if resp.Replayed {
		note("answer replayed: paid once")
	}
	if resp.Channel != nil && resp.Channel.Note != "" {
		note(resp.Channel.Note)
	}
	if resp.StatusCode != c.want {
		return 1
	}
	return 0
}
