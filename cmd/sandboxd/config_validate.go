package main

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// Validate checks every value against its allowed range and returns one
// message per problem, each naming the key and what is allowed.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, key, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("config: %s: "+format, append([]any{key}, args...)...))
		}
	}
	s, rt := c.Server, c.Runtime
	_, _, err := net.SplitHostPort(s.Addr)
	check(err == nil, "server.addr", "%q is not host:port (for example :8080 or 127.0.0.1:8080)", s.Addr)
	check(inRange(s.MaxBodyBytes, kib, 16*mib), "server.max_body_bytes", "%d is outside 1 KiB..16 MiB", s.MaxBodyBytes)
	check(s.ShutdownTimeout >= 0 && s.ShutdownTimeout <= 10*time.Minute, "server.shutdown_timeout", "%v is outside 0s..10m", s.ShutdownTimeout)
	check(validMetricsAddr(s.MetricsAddr), "server.metrics_addr",
		"%q is not empty (off) or host:port on a loopback or private address; /metrics shows revenue, keep it off the public listener", s.MetricsAddr)
	check(s.MetricsAddr == "" || s.MetricsAddr != s.Addr || strings.HasSuffix(s.Addr, ":0"), "server.metrics_addr", "%q is server.addr; /metrics must not be on the public listener", s.MetricsAddr)
	check(oneOf(s.LogLevel, "debug", "info", "warn", "error"), "server.log_level", "%q is not one of debug, info, warn, error", s.LogLevel)

	check(rt.Image != "", "runtime.image", "is empty; name the image built by `make image` (sandbox-python:3.11)")
	check(oneOf(rt.OCIRuntime, "runc", "runsc", "crun"), "runtime.oci_runtime", "%q is not one of runc, runsc, crun", rt.OCIRuntime)
	check(rt.Timeout >= 100*time.Millisecond && rt.Timeout <= 5*time.Minute, "runtime.timeout", "%v is outside 100ms..5m", rt.Timeout)
	check(inRange(rt.MemoryBytes, 16*mib, 64*gib), "runtime.memory", "%d bytes is outside 16MiB..64GiB", rt.MemoryBytes)
	check(rt.CPUs >= 0.05 && rt.CPUs <= 64, "runtime.cpus", "%v is outside 0.05..64", rt.CPUs)
	check(inRange(rt.Pids, 8, 32768), "runtime.pids", "%d is outside 8..32768", rt.Pids)
	check(inRange(rt.TmpfsBytes, mib, 4*gib), "runtime.tmpfs", "%d bytes is outside 1MiB..4GiB", rt.TmpfsBytes)
	check(inRange(rt.MaxOutputBytes, kib, 16*mib), "runtime.max_output_bytes", "%d is outside 1 KiB..16 MiB", rt.MaxOutputBytes)
	check(inRange(rt.MaxCodeBytes, 1, s.MaxBodyBytes), "runtime.max_code_bytes",
		"%d is outside 1..server.max_body_bytes (%d): the code travels inside the body", rt.MaxCodeBytes, s.MaxBodyBytes)
	check(inRange(rt.MaxStdinBytes, 0, s.MaxBodyBytes), "runtime.max_stdin_bytes",
		"%d is outside 0..server.max_body_bytes (%d): stdin travels inside the body", rt.MaxStdinBytes, s.MaxBodyBytes)
	check(inRange(rt.MaxConcurrency, 1, 1024), "runtime.max_concurrency", "%d is outside 1..1024", rt.MaxConcurrency)
	check(rt.QueueWait >= 0 && rt.QueueWait <= time.Minute, "runtime.queue_wait", "%v is outside 0s..60s", rt.QueueWait)
	check(inRange(rt.PoolSize, 0, 256), "runtime.pool_size", "%d is outside 0..256", rt.PoolSize)
	check(inRange(rt.PoolMax, 0, 256), "runtime.pool_max", "%d is outside 0..256", rt.PoolMax)
	check(rt.PoolMax == 0 || rt.PoolMax >= rt.PoolSize, "runtime.pool_max",
		"%d is below runtime.pool_size (%d): set it to pool_size or more, or 0 for a pool of a fixed size", rt.PoolMax, rt.PoolSize)
	if host := hostMemory(); host > 0 {
		most := max(rt.PoolMax, rt.PoolSize) * rt.MemoryBytes
		check(most <= host/poolMemoryShare, "runtime.pool_max",
			"%d warm containers × runtime.memory %d MiB = %d MiB, more than 1/%d of this host's memory (%d MiB): lower runtime.pool_max or runtime.memory",
			max(rt.PoolMax, rt.PoolSize), rt.MemoryBytes/mib, most/mib, poolMemoryShare, host/mib)
	}
	check(validInstance(rt.Instance), "runtime.instance", "%q must be 1..63 letters, digits, '-', '_' or '.'", rt.Instance)
	if err := c.Payments.validate(rt); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validMetricsAddr: empty, or host:port with an explicit host (an empty
// host would listen on every interface).
func validMetricsAddr(a string) bool {
	if a == "" {
		return true
	}
	host, _, err := net.SplitHostPort(a)
	return err == nil && host != "" && host != "0.0.0.0" && host != "::"
}

func inRange(n, lo, hi int64) bool { return n >= lo && n <= hi }

func oneOf(s string, allowed ...string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}

func validInstance(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for _, r := range s {
		ok := r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !ok {
			return false
		}
	}
	return true
}
