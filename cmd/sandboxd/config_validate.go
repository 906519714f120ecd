package main

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"sandboxd/internal/configcheck"
)

// Validate checks every value once and returns one message per problem,
// each naming the key and what is allowed: the server keys and the
// runtime keys this command applies itself here, the runtime and payments
// sections in their own packages (runtime.Config.Validate,
// payments.Config.Validate, retries.Config.Validate; payments only when
// on), and here the checks across sections.
func (c Config) Validate() error {
	p := configcheck.Problems{Prefix: "config: "}
	s, rt := c.Server, c.Runtime
	_, _, err := net.SplitHostPort(s.Addr)
	p.Check(err == nil, "server.addr", "%q is not host:port (for example :8080 or 127.0.0.1:8080)", s.Addr)
	p.Check(configcheck.InRange(s.MaxBodyBytes, configcheck.KiB, 64*configcheck.MiB), "server.max_body_bytes", "%d is outside 1 KiB..64 MiB", s.MaxBodyBytes)
	p.Check(s.ShutdownTimeout >= 0 && s.ShutdownTimeout <= 10*time.Minute, "server.shutdown_timeout", "%v is outside 0s..10m", s.ShutdownTimeout)
	p.Check(validMetricsAddr(s.MetricsAddr), "server.metrics_addr",
		"%q is not empty (off) or host:port with a host that is not every interface; /metrics shows revenue: keep it on loopback or a private address", s.MetricsAddr)
	p.Check(s.MetricsAddr == "" || s.MetricsAddr != s.Addr || strings.HasSuffix(s.Addr, ":0"), "server.metrics_addr", "%q is server.addr; /metrics must not be on the public listener", s.MetricsAddr)
	p.Check(slices.Contains([]string{"debug", "info", "warn", "error"}, s.LogLevel), "server.log_level", "%q is not one of debug, info, warn, error", s.LogLevel)
	for _, o := range s.CORSOrigins {
		p.Check(validOrigin(o), "server.cors_origins", "%q is not \"*\" or an origin such as https://docs.example.com (scheme and host, no path); \"auto\" stands alone", o)
	}

	p.Add(s.clientErrors()...)

	p.Add(configErrors(rt.Config.Validate())...)
	// runtime accepts "" as the daemon's default; the file must name one.
	p.Check(rt.OCIRuntime != "", "runtime.oci_runtime", "is empty; name one of runc, runsc, crun")
	p.Check(configcheck.InRange(rt.MaxCodeBytes, 1, s.MaxBodyBytes), "runtime.max_code_bytes",
		"%d is outside 1..server.max_body_bytes (%d): the code travels inside the body", rt.MaxCodeBytes, s.MaxBodyBytes)
	p.Check(configcheck.InRange(rt.MaxStdinBytes, 0, s.MaxBodyBytes), "runtime.max_stdin_bytes",
		"%d is outside 0..server.max_body_bytes (%d): stdin travels inside the body", rt.MaxStdinBytes, s.MaxBodyBytes)
	p.Check(configcheck.InRange(rt.MaxConcurrency, 1, 1024), "runtime.max_concurrency", "%d is outside 1..1024", rt.MaxConcurrency)
	p.Check(rt.QueueWait >= 0 && rt.QueueWait <= time.Minute, "runtime.queue_wait", "%v is outside 0s..60s", rt.QueueWait)
	if err := c.bodyError(); err != nil {
		p.Add(err)
	}
	p.Add(c.validateEnvironments()...)
	p.Add(c.validateSessions()...)
	p.Add(c.fleetErrors()...)
	if c.Payments.Enabled {
		p.Add(configErrors(c.paymentsConfig().Validate(c.runBounds()))...)
	}
	p.Add(c.retriesErrors()...)
	return p.Err()
}

// bodyFraming bounds what a request body holds besides the code, stdin and
// files' content: the JSON around them, and each file's name (at most 1024
// bytes) with its own.
const (
	bodyFraming     = 4 << 10
	bodyFileFraming = 1024 + 64
)

// largestBody is the largest body a request within the caps needs: the code,
// stdin, the base64 of the files' bytes and the framing.
func (c Config) largestBody() int64 {
	rt := c.Runtime
	files := (int64(rt.MaxFilesBytes) + 2) / 3 * 4
	return int64(rt.MaxCodeBytes) + int64(rt.MaxStdinBytes) + files + bodyFraming + int64(rt.MaxFiles)*bodyFileFraming
}

// bodyError checks that server.max_body_bytes holds a request at the caps.
func (c Config) bodyError() error {
	need, rt := c.largestBody(), c.Runtime
	if int64(c.Server.MaxBodyBytes) >= need {
		return nil
	}
	return fmt.Errorf("config: server.max_body_bytes: %d cannot hold a request at the caps, %d = runtime.max_code_bytes (%d) + "+
		"runtime.max_stdin_bytes (%d) + the base64 of runtime.max_files_bytes (%d) + framing (%d + runtime.max_files (%d) × %d); "+
		"raise it to at least %d or lower those", c.Server.MaxBodyBytes, need, rt.MaxCodeBytes, rt.MaxStdinBytes, rt.MaxFilesBytes,
		bodyFraming, rt.MaxFiles, bodyFileFraming, need)
}

// configErrors splits the joined errors of a section's Validate into one
// "config: " line each.
func configErrors(err error) []error {
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{fmt.Errorf("config: %w", err)}
	}
	var errs []error
	for _, e := range joined.Unwrap() {
		errs = append(errs, configErrors(e)...)
	}
	return errs
}

// validMetricsAddr: empty, or host:port with an explicit host that is no
// unspecified address in any spelling (0.0.0.0, ::, ::0, ::ffff:0.0.0.0,
// ::%lo): those, like an empty host, listen on every interface. A host
// name is checked after it is bound (listenPrivate).
func validMetricsAddr(a string) bool {
	if a == "" {
		return true
	}
	host, _, err := net.SplitHostPort(a)
	if err != nil || host == "" {
		return false
	}
	ip, err := netip.ParseAddr(host) // reads a zone ("::%lo") too
	return err != nil || !ip.WithZone("").Unmap().IsUnspecified()
}

// validOrigin reports whether o is "*" or a browser origin: http or https,
// a host, an optional port, and nothing else.
func validOrigin(o string) bool {
	if o == "*" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Hostname() != "" &&
		u.User == nil && u.Path == "" && u.RawQuery == "" && u.Fragment == "" && !strings.HasSuffix(o, "/")
}
