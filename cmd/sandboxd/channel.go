package main

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"sandboxd/x402"
	"sandboxd/x402/channel/payer"
)

// channelCommand dispatches `sandboxd channel`'s subcommands.
func channelCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		channelHelp.write(stderr, newFlagSet("channel", stderr))
		return 2
	}
	switch args[0] {
	case "show":
		return channelShowCommand(args[1:], stdout, stderr)
	case "refund":
		return channelRefundCommand(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		channelHelp.write(stdout, newFlagSet("channel", stderr))
		return 0
	}
	fmt.Fprintf(stderr, "sandboxd channel: unknown subcommand %q\n", printable(args[0], false))
	channelHelp.write(stderr, newFlagSet("channel", stderr))
	return 2
}

// channelShowCommand prints the channels of a key's state file, those
// paid at --url's server only when it is given. It reads the file only:
// no key, no network.
func channelShowCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("channel show", stderr)
	keyFile := fs.String("key-file", "", "the payer's key file; its channels are in FILE.channels (required)")
	server := fs.String("url", "", "show only the channels paid at this service (any of its URLs)")
	if code, ok := parseFlags(fs, channelShowHelp, args, stdout); !ok {
		return code
	}
	if *keyFile == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sandboxd channel show: give --key-file and no arguments\nusage: %s\n", channelShowHelp.usage)
		return 2
	}
	path := payer.StatePath(*keyFile)
	chs, err := payer.ReadState(path)
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd channel show: %s\n", printable(err.Error(), false))
		return 1
	}
	origin := ""
	if *server != "" {
		origin = payer.Origin(*server)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tSERVER\tNETWORK\tASSET\tCHARGED\tBALANCE\tUNSPENT\tSTATE\tUPDATED")
	shown := 0
	for _, c := range chs {
		if origin != "" && !strings.EqualFold(c.Server, origin) {
			continue
		}
		shown++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.ID.Hex(), printable(c.Server, false), c.Network,
			c.Config.Token.Hex(), c.Charged, c.Balance, c.Unspent(), c.State, c.Updated.UTC().Format(time.RFC3339))
	}
	if shown == 0 {
		fmt.Fprintf(stdout, "no channels in %s\n", path)
		return 0
	}
	if err := tw.Flush(); err != nil {
		return 1
	}
	fmt.Fprintln(stdout, "(amounts in the asset's atomic units)")
	return 0
}

// channelRefundCommand asks the service at --url for what is left of the
// key's channel with it, and prints what came back.
func channelRefundCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("channel refund", stderr)
	keyFile := fs.String("key-file", "", "file holding the payer's hex private key (required)")
	url := fs.String("url", "", "the service (any of its URLs; the refund is asked at its /v1/channel) (required)")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	if code, ok := parseFlags(fs, channelRefundHelp, args, stdout); !ok {
		return code
	}
	var err error
	var key *ecdsa.PrivateKey
	switch {
	case *keyFile == "" || *url == "":
		err = errors.New("--key-file and --url are required")
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	default:
		key, err = x402.LoadKey(*keyFile)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd channel refund: %s\nusage: %s\n", printable(err.Error(), false), channelRefundHelp.usage)
		return 2
	}
	if w := plainHTTPWarning(*url); w != "" {
		fmt.Fprintf(stderr, "sandboxd channel refund: warning: %s\n", w)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	r, err := payer.Refund(ctx, callClient(*timeout), key, payer.StatePath(*keyFile), *url)
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd channel refund: %s\n", printable(err.Error(), false))
		return 1
	}
	line := fmt.Sprintf("refunded: %s atomic units of %s (%s) from channel %s, network %s, transaction %s",
		r.Amount, r.Asset, x402.FormatPrice(r.Amount), r.ID.Hex(), r.Network, dash(r.Transaction))
	fmt.Fprintln(stdout, printable(line, false))
	return 0
}
