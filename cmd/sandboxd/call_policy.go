package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
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

// callClient is the HTTP client of `sandboxd call`. A redirect of the paid
// request is refused: following a 307 or 308 would hand the signed payment
// (PAYMENT-SIGNATURE, X-PAYMENT) to another URL, perhaps another host over
// plain http, which could settle it first. The unpaid request follows
// redirects within its own origin (scheme, host and port) only.
func callClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, CheckRedirect: sameOriginUnpaid}
}

// sameOriginUnpaid is callClient's redirect policy; its errors say what was
// refused and why.
func sameOriginUnpaid(req *http.Request, via []*http.Request) error {
	first := via[0]
	if first.Header.Get(x402.HeaderPaymentSignature) != "" || first.Header.Get(x402.HeaderXPayment) != "" {
		return fmt.Errorf("the server redirected the paid request to %s; a payment is never forwarded, so nothing was sent there "+
			"(call the final URL with --url)", req.URL.Redacted())
	}
	if req.URL.Scheme != first.URL.Scheme || req.URL.Host != first.URL.Host {
		return fmt.Errorf("the server redirected to %s, another origin than %s://%s; sandboxd call follows redirects "+
			"within the same origin only (call that URL with --url if you trust it)", req.URL.Redacted(), first.URL.Scheme, first.URL.Host)
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}
