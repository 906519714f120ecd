package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"sandboxd"
	"sandboxd/internal/units"
	"sandboxd/payments"
	"sandboxd/payments/channels"
	"sandboxd/payments/ledger"
	"sandboxd/payments/retries"
	"sandboxd/runtime"
)

// Config is every setting of the service: config.yaml decoded whole. Each
// section is the type of the package that uses it, so no value is copied
// from one struct to another; the mapstructure tags name the keys.
type Config struct {
	Server   ServerConfig   `mapstructure:"server"`
	Runtime  RuntimeConfig  `mapstructure:"runtime"`
	Payments PaymentsConfig `mapstructure:"payments"`
	Sessions SessionsConfig `mapstructure:"sessions"`
	// Environments holds the environments.* keys: each environment a
	// request may name, by name (see EnvironmentConfig). omitempty because
	// LoadConfig decodes with Environments nil: viper's struct binding would
	// otherwise read the whole section as one key, the file's, hiding the
	// SANDBOX_ENVIRONMENTS_* variables.
	Environments map[string]EnvironmentConfig `mapstructure:"environments,omitempty"`
}

// RuntimeConfig holds the runtime.* keys: the Docker runner's own section
// (runtime.Config, squashed into the same keys) and the limits this command
// applies around it, in the admitter (internal/slots) and the HTTP API.
type RuntimeConfig struct {
	runtime.Config `mapstructure:",squash"`
	// MaxCodeBytes is runtime.max_code_bytes, the largest program.
	MaxCodeBytes units.Bytes `mapstructure:"max_code_bytes"`
	// MaxStdinBytes is runtime.max_stdin_bytes, the largest stdin.
	MaxStdinBytes units.Bytes `mapstructure:"max_stdin_bytes"`
	// MaxConcurrency is runtime.max_concurrency, the runs at once.
	MaxConcurrency int64 `mapstructure:"max_concurrency"`
	// QueueWait is runtime.queue_wait: how long a request waits for a
	// sandbox before it is answered 429.
	QueueWait time.Duration `mapstructure:"queue_wait"`
}

// PaymentsConfig holds the payments.* keys: the switch, the payments
// package's own section (payments.Config, squashed into the same keys),
// and payments.retries, the retries package's section.
type PaymentsConfig struct {
	// Enabled is payments.enabled: every call must pay.
	Enabled         bool `mapstructure:"enabled"`
	payments.Config `mapstructure:",squash"`
	// Retries is payments.retries: the answers kept for their payers'
	// retries (docs/design/retries.md). Its zero keep is resolved by
	// retriesConfig.
	Retries retries.Config `mapstructure:"retries"`
}

// defaultConfig is the one place of the defaults: the values used when
// neither the file nor the environment sets a key. config.yaml repeats
// them (TestRepositoryConfigMatchesDefaults).
func defaultConfig() Config {
	return Config{
		Server: ServerConfig{
			Addr:            ":8080",
			MaxBodyBytes:    12 << 20,
			ShutdownTimeout: 15 * time.Second,
			LogLevel:        "info",
			MetricsAddr:     "127.0.0.1:9090",
			Page:            true,
			CORSOrigins:     []string{corsAuto},
			// 1 KiB/s, 4x below a poor GPRS link; 5 s covers a radio's
			// wake-up and two lost packets' retransmissions (config.yaml).
			MinBodyRate:        1 << 10,
			BodyGrace:          5 * time.Second,
			MaxConnsPerClient:  64,
			MaxBodiesPerClient: 32,
			PublicURL:          "",
			TrustedProxies:     []string{},
			AdvertiseURL:       "",
			FleetSecretFile:    "",
		},
		Runtime: RuntimeConfig{
			Config: runtime.Config{
				Image:          "sandbox-python:3.11",
				OCIRuntime:     "runc",
				Timeout:        5 * time.Second,
				MemoryBytes:    128 << 20,
				NanoCPUs:       1e9,
				PidsLimit:      64,
				TmpfsBytes:     16 << 20,
				MaxOutputBytes: 65536,
				MaxFiles:       16,
				MaxFilesBytes:  8 << 20,
				PoolSize:       4,
				PoolMax:        16,
				Instance:       "default",
				BuildStatusDir: "data/build",
			},
			MaxCodeBytes:   65536,
			MaxStdinBytes:  65536,
			MaxConcurrency: 8,
			QueueWait:      2 * time.Second,
		},
		Payments: PaymentsConfig{
			Enabled: false,
			Config: payments.Config{
				Network:           "eip155:84532",
				Asset:             "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
				AssetName:         "USDC",
				AssetVersion:      "2",
				Price:             "0.005",
				PayTo:             "",
				MaxTimeoutSeconds: 180,
				Settlement:        payments.SettleFacilitator,
				FacilitatorURL:    "https://x402.org/facilitator",
				RPCURL:            "",
				RelayerKeyFile:    "",
				Ledger:            "data/ledger.db",
				ReplicaID:         "",
				Lease:             ledger.DefaultLease,
				VerifyTimeout:     payments.DefaultVerifyTimeout,
				SettleTimeout:     payments.DefaultSettleTimeout,
				RPCTimeout:        payments.DefaultRPCTimeout,
				MaxChecks:         payments.DefaultMaxChecks,
				CheckWait:         payments.DefaultCheckWait,
				Channels: channels.Config{Enabled: true, WithdrawDelay: channels.DefaultWithdrawDelay,
					MirrorEvery: channels.DefaultMirrorEvery, ClaimEvery: channels.DefaultClaimEvery,
					ClaimThreshold: channels.DefaultClaimThreshold, MaxClaimsPerTx: channels.DefaultMaxClaimsPerTx},
			},
			// Keep 0 is the larger of retries.DefaultKeep and the terms'
			// validity plus a minute (retriesConfig).
			Retries: retries.Config{Enabled: new(true), Keep: 0, Wait: retries.DefaultWait,
				MaxAnswerBytes: retries.DefaultMaxAnswerBytes, MaxBytes: retries.DefaultMaxBytes},
		},
		Sessions: SessionsConfig{
			Enabled:      true,
			Max:          8,
			MaxPerPayer:  2,
			MaxPerClient: 4,
			Memory:       0,
			IdleTimeout:  5 * time.Minute,
			MaxLifetime:  30 * time.Minute,
			OpenPrice:    "",
			QueueWait:    2 * time.Second,
		},
		// python's defaults are the runtime.* keys (resolveEnvironments).
		Environments: map[string]EnvironmentConfig{
			sandboxd.DataEnvironment: {
				Enabled:     true,
				Image:       "sandbox-python-data:3.11",
				Languages:   []string{sandboxd.LanguagePython},
				Timeout:     10 * time.Second,
				MemoryBytes: 512 << 20,
				NanoCPUs:    1e9,
				PidsLimit:   64,
				TmpfsBytes:  64 << 20,
				PoolSize:    1,
				PoolMax:     4,
				Price:       "",
			},
			nodeEnvironment: {
				Enabled:     true,
				Image:       "sandbox-node:24",
				Languages:   []string{sandboxd.LanguageJavaScript, sandboxd.LanguageTypeScript, sandboxd.LanguageBash},
				Timeout:     5 * time.Second,
				MemoryBytes: 256 << 20,
				NanoCPUs:    1e9,
				PidsLimit:   64,
				TmpfsBytes:  16 << 20,
				PoolSize:    2,
				PoolMax:     8,
				Price:       "",
			},
		},
	}
}

// LoadConfig reads the configuration: the defaults, then the file (path, or
// ./config.yaml when path is empty and that file exists), then SANDBOX_*
// environment variables. It returns every problem found, each naming its key.
func LoadConfig(path string) (Config, error) {
	// The struct binding makes every key of Config's sections settable from
	// the environment, even one the file does not name; it cannot see into
	// the environments map, whose keys bindEnvironments binds.
	v := viper.NewWithOptions(viper.ExperimentalBindStruct(), viper.EnvKeyReplacer(strings.NewReplacer(".", "_")))
	v.SetEnvPrefix("SANDBOX")
	v.AutomaticEnv()
	if path == "" {
		if _, err := os.Stat("config.yaml"); err == nil {
			path = "config.yaml"
		}
	}
	if path != "" {
		if err := readConfigFile(v, path); err != nil {
			return Config{}, fmt.Errorf("config: reading %s: %w", path, err)
		}
		if err := nullKeys(v); err != nil {
			return Config{}, err
		}
	}
	if err := bindEnvironments(v); err != nil {
		return Config{}, err
	}
	cfg := defaultConfig()
	cfg.Environments = nil // their defaults are resolveEnvironments'
	// Unknown keys are read from the metadata, as keys, rather than from
	// the text of the error UnmarshalExact (ErrorUnused) would put them in.
	var md mapstructure.Metadata
	decodeErr := v.Unmarshal(&cfg, viper.DecodeHook(decodeHook), func(dc *mapstructure.DecoderConfig) { dc.Metadata = &md })
	if err := decodeErrors(path, decodeErr, md.Unused); err != nil {
		return Config{}, err
	}
	cfg.resolveEnvironments(v.IsSet)
	cfg.resolveCORS()
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}
