package main

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"sandboxd/internal/configcheck"
	"sandboxd/internal/units"
)

// ServerConfig holds the server.* keys: the HTTP listener's.
type ServerConfig struct {
	// Addr is server.addr, where to listen (host:port).
	Addr string `mapstructure:"addr"`
	// MaxBodyBytes is server.max_body_bytes, the largest request body.
	MaxBodyBytes units.Bytes `mapstructure:"max_body_bytes"`
	// ShutdownTimeout is server.shutdown_timeout: how long runs may finish
	// after SIGTERM or SIGINT.
	ShutdownTimeout time.Duration `mapstructure:"shutdown_timeout"`
	// LogLevel is server.log_level: debug, info, warn or error.
	LogLevel string `mapstructure:"log_level"`
	// MetricsAddr is server.metrics_addr: the loopback listener of
	// GET /metrics; empty turns it off.
	MetricsAddr string `mapstructure:"metrics_addr"`
	// Page is server.page: serve the try-it page at /.
	Page bool `mapstructure:"page"`
	// CORSOrigins is server.cors_origins: the origins whose scripts may
	// call /v1/*, or "*" for any; corsAuto, the default, is resolved by
	// resolveCORS.
	CORSOrigins []string `mapstructure:"cors_origins"`
	// MinBodyRate is server.min_body_rate: the slowest a request body may
	// arrive, in bytes a second on average after BodyGrace; 0 = no rate.
	MinBodyRate units.Bytes `mapstructure:"min_body_rate"`
	// BodyGrace is server.body_grace: how far a body may lag behind
	// MinBodyRate before it is cut off with a 408.
	BodyGrace time.Duration `mapstructure:"body_grace"`
	// MaxConnsPerClient is server.max_conns_per_client: connections one
	// client address may hold open at once; 0 = no cap.
	MaxConnsPerClient int64 `mapstructure:"max_conns_per_client"`
	// MaxBodiesPerClient is server.max_bodies_per_client: request bodies
	// one client address may be sending at once; 0 = no cap.
	MaxBodiesPerClient int64 `mapstructure:"max_bodies_per_client"`
	// PublicURL is server.public_url: the service's own URL, which alone
	// names the resource a payment pays for; "" = from the request.
	PublicURL string `mapstructure:"public_url"`
	// TrustedProxies is server.trusted_proxies: the IPs or CIDRs of the
	// reverse proxies whose X-Forwarded-* headers are believed.
	TrustedProxies []string `mapstructure:"trusted_proxies"`
	// AdvertiseURL is server.advertise_url: this replica's internal
	// address, where the other replicas of a fleet forward the calls of
	// its sessions; required in a fleet with sessions on.
	AdvertiseURL string `mapstructure:"advertise_url"`
	// FleetSecretFile is server.fleet_secret_file: the file (mode 600) of
	// the secret the replicas sign their forwarded calls with; required
	// with AdvertiseURL.
	FleetSecretFile string `mapstructure:"fleet_secret_file"`
}

// corsAuto is server.cors_origins' default: any origin ("*") when calls
// are paid, none when they are free. A free instance is often an internal
// one: with "*", any page a visitor of it opens could run programs on it
// and read their output through the visitor's browser. A paid call carries
// its own signed payment, so a page on another origin can do no more than
// curl with it; browser wallets on portals need "*".
const corsAuto = "auto"

// resolveCORS turns server.cors_origins' corsAuto into the origins of the
// payment mode.
func (c *Config) resolveCORS() {
	if len(c.Server.CORSOrigins) != 1 || c.Server.CORSOrigins[0] != corsAuto {
		return
	}
	c.Server.CORSOrigins = []string{}
	if c.Payments.Enabled {
		c.Server.CORSOrigins = []string{"*"}
	}
}

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
