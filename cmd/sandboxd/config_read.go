package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"
)

// reader copies values out of viper, collecting a message per bad value
// instead of silently taking a zero, as viper's own getters do.
type reader struct {
	v    *viper.Viper
	errs []error
}

func (r *reader) config() Config {
	return Config{
		Server: ServerConfig{
			Addr:            r.str("server.addr"),
			MaxBodyBytes:    r.bytes("server.max_body_bytes"),
			ShutdownTimeout: r.duration("server.shutdown_timeout"),
			LogLevel:        r.str("server.log_level"),
			MetricsAddr:     r.str("server.metrics_addr"),
		},
		Runtime: RuntimeConfig{
			Image:          r.str("runtime.image"),
			OCIRuntime:     r.str("runtime.oci_runtime"),
			Timeout:        r.duration("runtime.timeout"),
			MemoryBytes:    r.bytes("runtime.memory"),
			CPUs:           r.float("runtime.cpus"),
			Pids:           r.int("runtime.pids"),
			TmpfsBytes:     r.bytes("runtime.tmpfs"),
			MaxOutputBytes: r.bytes("runtime.max_output_bytes"),
			MaxCodeBytes:   r.bytes("runtime.max_code_bytes"),
			MaxStdinBytes:  r.bytes("runtime.max_stdin_bytes"),
			MaxConcurrency: r.int("runtime.max_concurrency"),
			QueueWait:      r.duration("runtime.queue_wait"),
			PoolSize:       r.int("runtime.pool_size"),
			PoolMax:        r.int("runtime.pool_max"),
			Instance:       r.str("runtime.instance"),
		},
		Payments: PaymentsConfig{
			Enabled:           r.bool("payments.enabled"),
			Network:           r.str("payments.network"),
			Asset:             r.str("payments.asset"),
			AssetName:         r.str("payments.asset_name"),
			AssetVersion:      r.str("payments.asset_version"),
			Price:             r.str("payments.price"),
			PayTo:             r.str("payments.pay_to"),
			MaxTimeoutSeconds: r.int("payments.max_timeout_seconds"),
			Settlement:        r.str("payments.settlement"),
			FacilitatorURL:    r.str("payments.facilitator_url"),
			RPCURL:            r.str("payments.rpc_url"),
			RelayerKeyFile:    r.str("payments.relayer_key_file"),
			Ledger:            r.str("payments.ledger"),
			ReplicaID:         r.str("payments.replica_id"),
			Lease:             r.duration("payments.lease"),
			VerifyTimeout:     r.duration("payments.verify_timeout"),
			SettleTimeout:     r.duration("payments.settle_timeout"),
			RPCTimeout:        r.duration("payments.rpc_timeout"),
			MaxChecks:         r.int("payments.max_checks"),
			CheckWait:         r.duration("payments.check_wait"),
		},
	}
}

func (r *reader) fail(key string, val any, want string) {
	r.errs = append(r.errs, fmt.Errorf("config: %s: %v is not %s", key, val, want))
}

func (r *reader) str(key string) string {
	return strings.TrimSpace(fmt.Sprint(r.v.Get(key)))
}

func (r *reader) duration(key string) time.Duration {
	s := r.str(key)
	d, err := time.ParseDuration(s)
	if err != nil {
		r.fail(key, s, "a duration such as 5s or 250ms")
	}
	return d
}

func (r *reader) int(key string) int64 {
	s := r.str(key)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		r.fail(key, s, "a whole number")
	}
	return n
}

func (r *reader) float(key string) float64 {
	s := r.str(key)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		r.fail(key, s, "a number such as 1.0")
	}
	return f
}

func (r *reader) bool(key string) bool {
	s := r.str(key)
	b, err := strconv.ParseBool(s)
	if err != nil {
		r.fail(key, s, "true or false")
	}
	return b
}

func (r *reader) bytes(key string) int64 {
	s := r.str(key)
	n, err := parseBytes(s)
	if err != nil {
		r.fail(key, s, "a size such as 65536, 512KiB, 128MiB or 1GiB")
	}
	return n
}

// byteUnits are the accepted size suffixes, longest first.
var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30},
	{"B", 1},
}

// parseBytes parses a size: a whole number of bytes, or one with a unit
// (KiB, MiB, GiB are powers of 1024; KB, MB, GB powers of 1000; k, m, g as
// in Docker).
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}
