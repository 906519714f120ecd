package main

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"sandboxd/internal/configcheck"
)

// clientErrors checks the keys that bound what one client may hold and
// how the service names itself: the body rate, the per-client caps, the
// public URL and the trusted proxies.
func (s ServerConfig) clientErrors() []error {
	p := configcheck.Problems{Prefix: "config: "}
	p.Check(s.MinBodyRate == 0 || configcheck.InRange(s.MinBodyRate, 64, 64*configcheck.MiB), "server.min_body_rate",
		"%d is outside 64..64MiB bytes a second (or 0 for no rate)", s.MinBodyRate)
	p.Check(s.BodyGrace >= 0 && s.BodyGrace <= time.Minute, "server.body_grace", "%v is outside 0s..60s", s.BodyGrace)
	p.Check(configcheck.InRange(s.MaxConnsPerClient, 0, 1<<20), "server.max_conns_per_client", "%d is outside 0..1048576 (0 = no cap)", s.MaxConnsPerClient)
	p.Check(configcheck.InRange(s.MaxBodiesPerClient, 0, 1<<20), "server.max_bodies_per_client", "%d is outside 0..1048576 (0 = no cap)", s.MaxBodiesPerClient)
	p.Check(s.MaxConnsPerClient == 0 || s.MaxBodiesPerClient <= s.MaxConnsPerClient, "server.max_bodies_per_client",
		"%d is over server.max_conns_per_client (%d): each body being sent holds a connection", s.MaxBodiesPerClient, s.MaxConnsPerClient)
	if _, err := publicURL(s.PublicURL); err != nil {
		p.Add(fmt.Errorf("config: server.public_url: %w", err))
	}
	if _, err := trustedProxies(s.TrustedProxies); err != nil {
		p.Add(fmt.Errorf("config: server.trusted_proxies: %w", err))
	}
	return p.Errs()
}

// publicURL is server.public_url without its trailing slash: "" or an
// absolute http or https URL with a host and no user, query or fragment.
func publicURL(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#") || u.Opaque != "" {
		return "", fmt.Errorf("%q is not an absolute http(s) URL such as https://sandbox.example.com "+
			"(an optional path prefix; no user, query or fragment)", raw)
	}
	return strings.TrimSuffix(raw, "/"), nil
}

// trustedProxies parses server.trusted_proxies: each an IP address or a
// CIDR block.
func trustedProxies(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%q is not an IP address or a CIDR block such as 10.0.0.0/8 or ::1", s)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
