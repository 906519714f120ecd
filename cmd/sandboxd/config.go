package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/viper"
)

// Config is every setting of the service, copied out of viper into plain
// fields so that no library package ever sees viper.
type Config struct {
	Server   ServerConfig
	Runtime  RuntimeConfig
	Payments PaymentsConfig
}

// ServerConfig holds the server.* keys.
type ServerConfig struct {
	Addr            string
	MaxBodyBytes    int64
	ShutdownTimeout time.Duration
	LogLevel        string
	// MetricsAddr is server.metrics_addr: the loopback listener of
	// GET /metrics; empty turns it off.
	MetricsAddr string
}

// RuntimeConfig holds the runtime.* keys.
type RuntimeConfig struct {
	Image          string
	OCIRuntime     string
	Timeout        time.Duration
	MemoryBytes    int64
	CPUs           float64
	Pids           int64
	TmpfsBytes     int64
	MaxOutputBytes int64
	MaxCodeBytes   int64
	MaxStdinBytes  int64
	MaxConcurrency int64
	QueueWait      time.Duration
	PoolSize       int64
	PoolMax        int64
	Instance       string
}

// PaymentsConfig holds the payments.* keys.
type PaymentsConfig struct {
	Enabled           bool
	Network           string
	Asset             string
	AssetName         string
	AssetVersion      string
	Price             string
	PayTo             string
	MaxTimeoutSeconds int64
	Settlement        string
	FacilitatorURL    string
	RPCURL            string
	RelayerKeyFile    string
	Ledger            string
	ReplicaID         string
	Lease             time.Duration
	VerifyTimeout     time.Duration
	SettleTimeout     time.Duration
	RPCTimeout        time.Duration
	MaxChecks         int64
	CheckWait         time.Duration
}

// defaults are the values used when neither the file nor the environment
// sets a key; they match config.yaml. Every known key is listed here.
var defaults = map[string]any{
	"server.addr":                  ":8080",
	"server.max_body_bytes":        262144,
	"server.shutdown_timeout":      "15s",
	"server.log_level":             "info",
	"server.metrics_addr":          "127.0.0.1:9090",
	"runtime.image":                "sandbox-python:3.11",
	"runtime.oci_runtime":          "runc",
	"runtime.timeout":              "5s",
	"runtime.memory":               "128MiB",
	"runtime.cpus":                 1.0,
	"runtime.pids":                 64,
	"runtime.tmpfs":                "16MiB",
	"runtime.max_output_bytes":     65536,
	"runtime.max_code_bytes":       65536,
	"runtime.max_stdin_bytes":      65536,
	"runtime.max_concurrency":      8,
	"runtime.queue_wait":           "2s",
	"runtime.pool_size":            4,
	"runtime.pool_max":             16,
	"runtime.instance":             "default",
	"payments.enabled":             false,
	"payments.network":             "eip155:84532",
	"payments.asset":               "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
	"payments.asset_name":          "USDC",
	"payments.asset_version":       "2",
	"payments.price":               "0.005",
	"payments.pay_to":              "",
	"payments.max_timeout_seconds": 120,
	"payments.settlement":          "facilitator",
	"payments.facilitator_url":     "https://x402.org/facilitator",
	"payments.rpc_url":             "",
	"payments.relayer_key_file":    "",
	"payments.ledger":              "data/ledger.db",
	"payments.replica_id":          "",
	"payments.lease":               "30s",
	"payments.verify_timeout":      "10s",
	"payments.settle_timeout":      "60s",
	"payments.rpc_timeout":         "10s",
	"payments.max_checks":          64,
	"payments.check_wait":          "3s",
}

// LoadConfig reads the configuration: the defaults, then the file (path, or
// ./config.yaml when path is empty and that file exists), then SANDBOX_*
// environment variables. It returns every problem found, each naming its key.
func LoadConfig(path string) (Config, error) {
	v := viper.New()
	for k, val := range defaults {
		v.SetDefault(k, val)
	}
	v.SetEnvPrefix("SANDBOX")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	if path == "" {
		if _, err := os.Stat("config.yaml"); err == nil {
			path = "config.yaml"
		}
	}
	if path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return Config{}, fmt.Errorf("config: reading %s: %w", path, err)
		}
		if err := checkKnownKeys(v, path); err != nil {
			return Config{}, err
		}
	}
	r := &reader{v: v}
	cfg := r.config()
	if len(r.errs) > 0 {
		return Config{}, errors.Join(r.errs...)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// checkKnownKeys refuses a file that sets a key the service does not know,
// which is most often a typo that would otherwise be silently ignored.
func checkKnownKeys(v *viper.Viper, path string) error {
	var unknown []string
	for _, k := range v.AllKeys() {
		if _, ok := defaults[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("config: %s sets unknown key(s) %s; see config.yaml in the repository for the known keys",
		path, strings.Join(unknown, ", "))
}
