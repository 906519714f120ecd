package main

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"sandboxd/x402"
)

// listFlag is a repeatable string flag; commas also separate values.
type listFlag []string

// String implements flag.Value.
func (l *listFlag) String() string { return strings.Join(*l, ",") }

// Set implements flag.Value.
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// payPolicy builds the client's payment policy from its flags; unnamed
// networks and assets keep the defaults.
func payPolicy(maxAmount string, networks, assets []string, payTo string, maxWindow time.Duration) (x402.PayPolicy, error) {
	p := x402.DefaultPayPolicy()
	max, err := x402.ParsePrice(maxAmount)
	if err != nil {
		return p, fmt.Errorf("--max-amount: %w", err)
	}
	p.MaxAmount = max
	if len(networks) > 0 {
		p.Networks = nil
		for _, n := range networks {
			if _, err := x402.ChainID(n); err != nil {
				return p, fmt.Errorf("--network %q: %w", n, err)
			}
			p.Networks = append(p.Networks, x402.CanonicalNetwork(n))
		}
	}
	if len(assets) > 0 {
		p.Assets = assets
	}
	p.PayTo = payTo
	if maxWindow < time.Second {
		return p, fmt.Errorf("--max-window %s is under a second", maxWindow)
	}
	p.MaxWindow = maxWindow
	return p, nil
}

// plainHTTPWarning warns when a payment would travel over plain http to a
// host other than this machine: anyone on the path can read the terms and
// change them.
func plainHTTPWarning(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		return ""
	}
	host := u.Hostname()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return ""
	}
	return fmt.Sprintf("%s is plain http to %s: the terms and the payment can be read and changed on the way; use https", raw, host)
}
