package main

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"sandboxd"
	"sandboxd/internal/units"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRepositoryConfigMatchesDefaults(t *testing.T) {
	fromFile, err := LoadConfig("../../config.yaml")
	if err != nil {
		t.Fatalf("config.yaml does not load: %v", err)
	}
	fromDefaults, err := LoadConfig(writeConfig(t, "{}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromFile, fromDefaults) {
		t.Fatalf("config.yaml and the built-in defaults differ:\n%+v\n%+v", fromFile, fromDefaults)
	}
	rt := fromFile.Runtime
	if rt.Timeout != 5*time.Second || rt.MemoryBytes != 128<<20 || rt.PidsLimit != 64 || rt.TmpfsBytes != 16<<20 {
		t.Fatalf("defaults: %+v", rt)
	}
}

// TestRepositoryConfigDocumentsEveryKey: config.yaml is the reference of
// the keys (docs/operating.md points to it), so it sets every key Config has.
func TestRepositoryConfigDocumentsEveryKey(t *testing.T) {
	v := viper.New()
	v.SetConfigFile("../../config.yaml")
	if err := v.ReadInConfig(); err != nil {
		t.Fatal(err)
	}
	keys := configKeys(t)
	if len(keys) < 40 {
		t.Fatalf("configKeys found %d keys: %v", len(keys), keys)
	}
	for _, k := range keys {
		if !v.InConfig(k) {
			t.Errorf("config.yaml does not document %s", k)
		}
	}
}

// configKeys lists every key of every section but environments, from
// Config's tags, as viper's struct binding (LoadConfig) finds them.
func configKeys(t *testing.T) []string {
	t.Helper()
	return slices.Sorted(maps.Keys(flatSettings(t, Config{})))
}

// flatSettings is cfg as its keys' values, "section.key" each.
func flatSettings(t *testing.T, cfg Config) map[string]any {
	t.Helper()
	var m map[string]any
	if err := mapstructure.Decode(cfg, &m); err != nil {
		t.Fatal(err)
	}
	v := viper.New()
	if err := v.MergeConfigMap(m); err != nil {
		t.Fatal(err)
	}
	flat := map[string]any{}
	for _, k := range v.AllKeys() {
		flat[k] = v.Get(k)
	}
	return flat
}

// TestEveryKeyFromEnvironment: each key of every section, and of an
// environment built in or added, is set by its SANDBOX_ variable alone:
// the value loaded differs from the default, or the refusal names the key.
func TestEveryKeyFromEnvironment(t *testing.T) {
	keys := configKeys(t)
	for _, k := range environmentKeys() {
		keys = append(keys, "environments.data."+k, "environments.extra."+k)
	}
	// pay_to, so that payments turned on by their variable are valid.
	const file = "payments:\n  pay_to: \"0x000000000000000000000000000000000000dEaD\"\n"
	defaults := mustLoad(t, file)
	for _, key := range keys {
		t.Run(key, func(t *testing.T) {
			before := loadedValue(t, defaults, key)
			t.Setenv("SANDBOX_"+strings.ToUpper(strings.ReplaceAll(key, ".", "_")), otherValue(t, before))
			cfg, err := LoadConfig(writeConfig(t, file))
			switch {
			case err != nil && !strings.Contains(err.Error(), key):
				t.Fatalf("refused without naming %s: %v", key, err)
			case err == nil && reflect.DeepEqual(loadedValue(t, cfg, key), before):
				t.Fatalf("%s is still %v", key, before)
			}
		})
	}
}

// loadedValue is the value of key in cfg; an environment cfg lacks is
// python's, as an added one starts from runtime.* (resolveEnvironments).
func loadedValue(t *testing.T, cfg Config, key string) any {
	t.Helper()
	rest, ok := strings.CutPrefix(key, "environments.")
	if !ok {
		return flatSettings(t, cfg)[key]
	}
	name, k, _ := strings.Cut(rest, ".")
	e, ok := cfg.Environments[name]
	if !ok {
		e = cfg.Environments[sandboxd.DefaultEnvironment]
	}
	return environmentSettings(e)[k]
}

// otherValue is a value of v's type other than v, as a variable spells it.
func otherValue(t *testing.T, v any) string {
	t.Helper()
	switch v := v.(type) {
	case string, []string:
		return "zz"
	case bool:
		return strconv.FormatBool(!v)
	case *bool:
		return strconv.FormatBool(!*v)
	case time.Duration:
		return (v + time.Second).String()
	case units.NanoCPUs:
		return strconv.FormatFloat(float64(v)/1e9+1, 'f', -1, 64)
	}
	if n := reflect.ValueOf(v); n.CanInt() {
		return strconv.FormatInt(n.Int()+1, 10)
	}
	t.Fatalf("no other value for %T", v)
	return ""
}

func TestEnvironmentOverridesFile(t *testing.T) {
	t.Setenv("SANDBOX_RUNTIME_TIMEOUT", "3s")
	t.Setenv("SANDBOX_SERVER_ADDR", "127.0.0.1:9999")
	cfg, err := LoadConfig(writeConfig(t, "runtime:\n  timeout: 4s\n  memory: 256MiB\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Runtime.Timeout != 3*time.Second || cfg.Server.Addr != "127.0.0.1:9999" || cfg.Runtime.MemoryBytes != 256<<20 {
		t.Fatalf("got timeout %v addr %s memory %d", cfg.Runtime.Timeout, cfg.Server.Addr, cfg.Runtime.MemoryBytes)
	}
}

// TestEnvironmentDecodesUnits: a key the file does not name is set from the
// environment with the same syntaxes as in the file, and a bad value names
// its key.
func TestEnvironmentDecodesUnits(t *testing.T) {
	t.Setenv("SANDBOX_RUNTIME_CPUS", "0.5")
	t.Setenv("SANDBOX_RUNTIME_TMPFS", "32m")
	t.Setenv("SANDBOX_PAYMENTS_CHECK_WAIT", "1s")
	cfg, err := LoadConfig(writeConfig(t, "{}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Runtime.NanoCPUs != 5e8 || cfg.Runtime.TmpfsBytes != 32<<20 || cfg.Payments.CheckWait != time.Second {
		t.Fatalf("got cpus %d tmpfs %d check_wait %s", cfg.Runtime.NanoCPUs, cfg.Runtime.TmpfsBytes, cfg.Payments.CheckWait)
	}
	t.Setenv("SANDBOX_RUNTIME_PIDS", "many")
	if _, err := LoadConfig(writeConfig(t, "{}\n")); err == nil || !strings.Contains(err.Error(), "runtime.pids: many is not a whole number") {
		t.Fatalf("bad value from the environment: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"ok", "runtime:\n  timeout: 2s\n", ""},
		{"unknown key", "runtime:\n  timeoutt: 2s\n", "unknown key(s) runtime.timeoutt"},
		{"bad duration", "runtime:\n  timeout: fast\n", "runtime.timeout: fast is not a duration"},
		{"timeout too long", "runtime:\n  timeout: 1h\n", "runtime.timeout: 1h0m0s is outside"},
		{"bad size", "runtime:\n  memory: lots\n", "runtime.memory: lots is not a size"},
		{"memory too small", "runtime:\n  memory: 1MiB\n", "runtime.memory"},
		{"pids too low", "runtime:\n  pids: 2\n", "runtime.pids: 2 is outside 8..32768"},
		{"cpus", "runtime:\n  cpus: 0\n", "runtime.cpus"},
		{"cpus not a number", "runtime:\n  cpus: many\n", "runtime.cpus: many is not a number"},
		{"oci runtime", "runtime:\n  oci_runtime: kata\n", "runtime.oci_runtime: \"kata\" is not one of"},
		{"null value", "server:\n  log_level: ~\n", "server.log_level: is null"},
		{"empty value", "runtime:\n  timeout:\n", "runtime.timeout: is null"},
		{"empty oci runtime", "runtime:\n  oci_runtime: \"\"\n", "runtime.oci_runtime: is empty"},
		{"code over body", "server:\n  max_body_bytes: 2048\nruntime:\n  max_code_bytes: 4096\n", "runtime.max_code_bytes"},
		{"stdin over body", "server:\n  max_body_bytes: 2048\nruntime:\n  max_code_bytes: 1000\n  max_stdin_bytes: 4096\n", "runtime.max_stdin_bytes"},
		{"concurrency", "runtime:\n  max_concurrency: 0\n", "runtime.max_concurrency: 0 is outside"},
		{"queue wait", "runtime:\n  queue_wait: -1s\n", "runtime.queue_wait"},
		{"pool", "runtime:\n  pool_size: 1000\n", "runtime.pool_size"},
		{"pool max below size", "runtime:\n  pool_size: 8\n  pool_max: 4\n", "runtime.pool_max: 4 is below runtime.pool_size"},
		{"pool max over memory", "runtime:\n  pool_max: 256\n  memory: 64GiB\n", "more than 1/2 of this host's memory"},
		{"pool max fixed size", "runtime:\n  pool_size: 8\n  pool_max: 0\n", ""},
		{"instance", "runtime:\n  instance: \"a b\"\n", "runtime.instance"},
		{"addr", "server:\n  addr: 8080\n", "server.addr"},
		{"log level", "server:\n  log_level: loud\n", "server.log_level"},
		{"metrics on every interface", "server:\n  metrics_addr: \"0.0.0.0:9090\"\n", "server.metrics_addr"},
		{"metrics on every interface, IPv6 spelled out", "server:\n  metrics_addr: \"[::0]:9090\"\n", "server.metrics_addr"},
		{"metrics on every interface, IPv4-mapped", "server:\n  metrics_addr: \"[::ffff:0.0.0.0]:9090\"\n", "server.metrics_addr"},
		{"metrics on every interface, no host", "server:\n  metrics_addr: \":9090\"\n", "server.metrics_addr"},
		{"metrics on every interface, with a zone", "server:\n  metrics_addr: \"[::%lo]:9090\"\n", "server.metrics_addr"},
		{"metrics on the public listener", "server:\n  addr: \"127.0.0.1:8080\"\n  metrics_addr: \"127.0.0.1:8080\"\n", "server.metrics_addr"},
		{"metrics off", "server:\n  metrics_addr: \"\"\n", ""},
		{"payments lease too short", "payments:\n  enabled: true\n  pay_to: \"0x000000000000000000000000000000000000dEaD\"\n  lease: 1s\n", "payments.lease"},
		{"payments postgres URL without host", "payments:\n  enabled: true\n  pay_to: \"0x000000000000000000000000000000000000dEaD\"\n  ledger: \"postgres:///x\"\n", "payments.ledger"},
		{"sizes with units", "runtime:\n  tmpfs: 32m\n  max_output_bytes: 1MiB\n", ""},
		{"payments need pay_to", "payments:\n  enabled: true\n", "payments.pay_to"},
		{"payments bad price", "payments:\n  enabled: true\n  pay_to: \"0x000000000000000000000000000000000000dEaD\"\n  price: \"0.0000001\"\n", "payments.price"},
		{"payments off ignore their keys", "payments:\n  price: \"free\"\n", ""},
		{"enabled not bool", "payments:\n  enabled: maybe\n", "payments.enabled: maybe is not true or false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(writeConfig(t, tc.yaml))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestBadValuesNameTheirKey: a value of the wrong type, from the file or
// from a variable, is refused naming its key and the form expected, never
// taken as a zero or truncated; an unknown key, at any depth, is refused
// by name.
func TestBadValuesNameTheirKey(t *testing.T) {
	for _, tc := range []struct{ yaml, variable, value, want string }{
		{"runtime:\n  timeout: fast\n", "", "", "config: runtime.timeout: fast is not a duration such as 5s"},
		{"{}\n", "SANDBOX_RUNTIME_TIMEOUT", "fast", "config: runtime.timeout: fast is not a duration such as 5s"},
		{"server:\n  page: yes please\n", "", "", "config: server.page: yes please is not true or false"},
		{"{}\n", "SANDBOX_SERVER_PAGE", "yes please", "config: server.page: yes please is not true or false"},
		{"runtime:\n  max_concurrency: 1.5\n", "", "", "config: runtime.max_concurrency: 1.5 is not a whole number"},
		{"{}\n", "SANDBOX_SESSIONS_MAX", "1.5", "config: sessions.max: 1.5 is not a whole number"},
		{"{}\n", "SANDBOX_PAYMENTS_CHANNELS_MAX_CLAIMS_PER_TX", "0x10", "config: payments.channels.max_claims_per_tx: 0x10 is not"},
		{"{}\n", "SANDBOX_PAYMENTS_RETRIES_ENABLED", "on", "config: payments.retries.enabled: on is not true or false"},
		{"environments:\n  gpu:\n    pids: 1.5\n", "", "", "config: environments.gpu.pids: 1.5 is not a whole number"},
		{"surprise: 1\n", "", "", "unknown key(s) surprise;"},
		{"payments:\n  channels:\n    claim_evry: 1m\n", "", "", "unknown key(s) payments.channels.claim_evry;"},
		{"environments:\n  gpu:\n    memroy: 1GiB\n", "", "", "unknown key(s) environments.gpu.memroy;"},
	} {
		if tc.variable != "" {
			t.Setenv(tc.variable, tc.value)
		}
		_, err := LoadConfig(writeConfig(t, tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %s=%q: %v, want %q", tc.yaml, tc.variable, tc.value, err, tc.want)
		}
		if tc.variable != "" {
			os.Unsetenv(tc.variable)
		}
	}
}

func TestMissingConfigFileIsAnError(t *testing.T) {
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "nope.yaml")); err == nil {
		t.Fatal("a missing --config file was accepted")
	}
}

// TestFleetConfigExample: deploy/config.fleet.yaml holds only known keys
// and is valid once the per-host values come from the environment.
func TestFleetConfigExample(t *testing.T) {
	t.Setenv("SANDBOX_PAYMENTS_PAY_TO", "0x209693Bc6afc0C5328bA36FaF03C514EF312287C")
	t.Setenv("SANDBOX_PAYMENTS_LEDGER", "postgres://sandboxd:pw@db.internal:5432/sandboxd")
	t.Setenv("SANDBOX_PAYMENTS_REPLICA_ID", "host-a")
	cfg, err := LoadConfig("../../deploy/config.fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Payments.ReplicaID != "host-a" || cfg.Payments.Lease != 30*time.Second || cfg.Server.MetricsAddr == "" {
		t.Fatalf("fleet example: %+v %+v", cfg.Payments, cfg.Server)
	}
}

// TestPoolMaxBoundedByHostMemory: the least warm pools of every
// environment, at their memory limits, must fit in half the host; their
// growth up to pool_max is bounded at run time by the measured resident
// sizes (runtime's memory budget), so a pool_max beyond it is accepted.
func TestPoolMaxBoundedByHostMemory(t *testing.T) {
	saved := hostMemory
	t.Cleanup(func() { hostMemory = saved })
	hostMemory = func() int64 { return 1 << 30 } // a 1 GiB host: 512 MiB for the pools
	const noData = "environments:\n  data:\n    enabled: false\n  node:\n    enabled: false\n"
	for _, tc := range []struct{ yaml, want string }{
		{"runtime:\n  pool_size: 4\n  pool_max: 4\n" + noData, ""},                          // 512 MiB
		{"runtime:\n  pool_size: 2\n  pool_max: 16\n" + noData, ""},                         // grows within the budget
		{"runtime:\n  pool_size: 5\n  pool_max: 0\n" + noData, "python: 5 warm containers"}, // 640 MiB
		{"runtime:\n  pool_size: 4\n", "python: 4 warm containers × 128 MiB, data: 1 warm containers × 512 MiB, node: 2 warm"},
		{"runtime:\n  pool_size: 0\nenvironments:\n  node:\n    pool_size: 0\n", ""}, // data's 512 MiB alone
		{"runtime:\n  pool_size: 0\nenvironments:\n  data:\n    pool_size: 2\n", "data: 2 warm containers × 512 MiB"},
		{"runtime:\n  pool_size: 0\n", "data: 1 warm containers × 512 MiB, node: 2 warm containers × 256 MiB"}, // 1 GiB
	} {
		_, err := LoadConfig(writeConfig(t, tc.yaml))
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// TestLogLevelFromConfig: server.log_level sets the level of the
// service's logger.
func TestLogLevelFromConfig(t *testing.T) {
	var buf strings.Builder
	log := newLogger(&buf, "warn")
	log.Info("quiet")
	log.Warn("loud")
	if out := buf.String(); strings.Contains(out, "quiet") || !strings.Contains(out, "loud") {
		t.Fatalf("at warn the log is %q", out)
	}
}

// TestReplicaIDDefaultsToInstance: payments.replica_id, when empty, is
// the host name and runtime.instance; a value given is kept.
func TestReplicaIDDefaultsToInstance(t *testing.T) {
	cfg := defaultConfig()
	cfg.Runtime.Instance = "host-b"
	if got := cfg.paymentsConfig().ReplicaID; !strings.HasSuffix(got, "/host-b") {
		t.Errorf("replica id %q, want <host>/host-b", got)
	}
	cfg.Payments.ReplicaID = "r1"
	if got := cfg.paymentsConfig().ReplicaID; got != "r1" {
		t.Errorf("replica id %q, want r1", got)
	}
}
