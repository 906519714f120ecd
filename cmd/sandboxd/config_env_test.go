package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"

	"sandboxd/internal/units"
)

// mustLoad loads the configuration text, failing the test on an error.
func mustLoad(t *testing.T, yaml string) Config {
	t.Helper()
	cfg, err := LoadConfig(writeConfig(t, yaml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestEnvironmentDefaults: python is today's runtime.* values, data has
// its own defaults, both are on and run python; node has its own and is
// off until its image has a runner.
func TestEnvironmentDefaults(t *testing.T) {
	cfg := mustLoad(t, "{}\n")
	py, data, node := cfg.Environments["python"], cfg.Environments["data"], cfg.Environments["node"]
	want := EnvironmentConfig{Enabled: true, Image: "sandbox-python:3.11", Languages: []string{"python"}, Timeout: 5 * time.Second,
		MemoryBytes: 128 << 20, NanoCPUs: 1e9, PidsLimit: 64, TmpfsBytes: 16 << 20, PoolSize: 4, PoolMax: 16}
	if !reflect.DeepEqual(py, want) {
		t.Errorf("python %+v, want %+v", py, want)
	}
	want = EnvironmentConfig{Enabled: true, Image: "sandbox-python-data:3.11", Languages: []string{"python"}, Timeout: 10 * time.Second,
		MemoryBytes: 512 << 20, NanoCPUs: 1e9, PidsLimit: 64, TmpfsBytes: 64 << 20, PoolSize: 1, PoolMax: 4}
	if !reflect.DeepEqual(data, want) {
		t.Errorf("data %+v, want %+v", data, want)
	}
	want = EnvironmentConfig{Enabled: true, Image: "sandbox-node:24", Languages: []string{"javascript", "typescript", "bash"},
		Timeout: 5 * time.Second, MemoryBytes: 256 << 20, NanoCPUs: 1e9, PidsLimit: 64, TmpfsBytes: 16 << 20, PoolSize: 2, PoolMax: 8}
	if !reflect.DeepEqual(node, want) {
		t.Errorf("node %+v, want %+v", node, want)
	}
	if got := cfg.enabledEnvironments(); !slices.Equal(got, []string{"python", "data", "node"}) {
		t.Errorf("environments %v", got)
	}
	if cfg.Runtime.MaxFiles != 16 || cfg.Runtime.MaxFilesBytes != 8<<20 || cfg.Server.MaxBodyBytes != 12<<20 {
		t.Errorf("max_files %d, max_files_bytes %d, max_body_bytes %d", cfg.Runtime.MaxFiles, cfg.Runtime.MaxFilesBytes, cfg.Server.MaxBodyBytes)
	}
	if cfg.price("data") != "0.005" || cfg.price("python") != "0.005" {
		t.Errorf("prices %q %q", cfg.price("python"), cfg.price("data"))
	}
}

// TestPythonFollowsRuntimeKeys: python's values come from runtime.*, from
// the file and from SANDBOX_RUNTIME_* variables; environments.python.X,
// when set, wins; data is untouched by either.
func TestPythonFollowsRuntimeKeys(t *testing.T) {
	t.Setenv("SANDBOX_RUNTIME_TIMEOUT", "3s")
	cfg := mustLoad(t, "runtime:\n  memory: 256MiB\n  pool_size: 2\nenvironments:\n  python:\n    pids: 100\n    pool_size: 0\n")
	py := cfg.Environments["python"]
	if py.Timeout != 3*time.Second || py.MemoryBytes != 256<<20 || py.PidsLimit != 100 || py.PoolSize != 0 || py.PoolMax != 16 {
		t.Errorf("python %+v", py)
	}
	if data := cfg.Environments["data"]; data.Timeout != 10*time.Second || data.MemoryBytes != 512<<20 {
		t.Errorf("data %+v", data)
	}
	t.Setenv("SANDBOX_ENVIRONMENTS_PYTHON_TIMEOUT", "2s")
	if py := mustLoad(t, "{}\n").Environments["python"]; py.Timeout != 2*time.Second {
		t.Errorf("environments.python.timeout from the environment: %v", py.Timeout)
	}
}

// TestEnvironmentVariablesReachNestedKeys: SANDBOX_ENVIRONMENTS_<NAME>_<KEY>
// sets a key of a built-in environment, of one the file names, and adds
// an environment (names with '_' included), over the file.
func TestEnvironmentVariablesReachNestedKeys(t *testing.T) {
	t.Setenv("SANDBOX_ENVIRONMENTS_DATA_MEMORY", "1GiB")
	t.Setenv("SANDBOX_ENVIRONMENTS_DATA_PRICE", "0.01")
	t.Setenv("SANDBOX_ENVIRONMENTS_BIG_ONE_POOL_SIZE", "0")
	t.Setenv("SANDBOX_ENVIRONMENTS_BIG_ONE_IMAGE", "big:1")
	t.Setenv("SANDBOX_ENVIRONMENTS_GPU_CPUS", "2")
	t.Setenv("SANDBOX_ENVIRONMENTS_NODE_LANGUAGES", "javascript,bash")
	cfg := mustLoad(t, "environments:\n  data:\n    memory: 256MiB\n    timeout: 20s\n  gpu:\n    image: gpu:1\n")
	data, big, gpu := cfg.Environments["data"], cfg.Environments["big_one"], cfg.Environments["gpu"]
	if node := cfg.Environments["node"]; !slices.Equal(node.Languages, []string{"javascript", "bash"}) {
		t.Errorf("node's languages from a comma-separated variable: %q", node.Languages)
	}
	if data.MemoryBytes != 1<<30 || data.Timeout != 20*time.Second || data.Price != "0.01" || data.PoolMax != 4 {
		t.Errorf("data %+v", data)
	}
	if !big.Enabled || big.Image != "big:1" || big.PoolSize != 0 || big.MemoryBytes != 128<<20 || big.Timeout != 5*time.Second {
		t.Errorf("big_one (added by variables, the rest from runtime.*) %+v", big)
	}
	if gpu.Image != "gpu:1" || gpu.NanoCPUs != 2e9 {
		t.Errorf("gpu %+v", gpu)
	}
	if got := cfg.enabledEnvironments(); !slices.Equal(got, []string{"python", "big_one", "data", "gpu", "node"}) {
		t.Errorf("environments %v", got)
	}
	t.Setenv("SANDBOX_ENVIRONMENTS_DATA_ENABLED", "false")
	if got := mustLoad(t, "{}\n").enabledEnvironments(); !slices.Equal(got, []string{"python", "big_one", "gpu", "node"}) {
		t.Errorf("with data off: %v", got)
	}
}

// TestEnvironmentValidation: a bad value of an environment is refused
// naming its key; a problem of a value python takes from runtime.* is
// named once, by the runtime key.
func TestEnvironmentValidation(t *testing.T) {
	cases := []struct{ name, yaml, want, not string }{
		{"data memory", "environments:\n  data:\n    memory: 1MiB\n", "config: environments.data.memory: 1048576 bytes is outside 16MiB..64GiB", ""},
		{"data timeout syntax", "environments:\n  data:\n    timeout: soon\n", "config: environments.data.timeout: soon is not a duration", ""},
		{"data pool", "environments:\n  data:\n    pool_size: 8\n    pool_max: 2\n", "environments.data.pool_max: 2 is below environments.data.pool_size (8)", ""},
		{"python own key", "environments:\n  python:\n    pids: 2\n", "environments.python.pids: 2 is outside", "runtime.pids"},
		{"python from runtime", "runtime:\n  pids: 2\n", "config: runtime.pids: 2 is outside", "environments.python.pids"},
		{"python off", "environments:\n  python:\n    enabled: false\n", "environments.python.enabled: python is the default environment", ""},
		{"bad name", "environments:\n  \"da ta\":\n    image: x\n", "environments.da ta: the name must be 1..32", ""},
		{"long name", "environments:\n  " + strings.Repeat("a", 33) + ":\n    image: x\n", "the name must be 1..32", ""},
		{"unknown key", "environments:\n  data:\n    memroy: 1GiB\n", "unknown key(s) environments.data.memroy", ""},
		{"null environment", "environments:\n  data:\n", "environments.data: is null; give it a value, or remove the line for the default (to turn the environment off: environments.data.enabled: false)", ""},
		{"null key", "environments:\n  data:\n    image: ~\n", "environments.data.image: is null", ""},
		{"data tmpfs under the files", "environments:\n  data:\n    tmpfs: 4MiB\n", "runtime.max_files_bytes: 8388608 is over environments.data.tmpfs (4194304)", ""},
		{"empty image", "environments:\n  gpu:\n    image: \"\"\n", "environments.gpu.image: is empty", ""},
		{"data off skips its keys", "environments:\n  data:\n    enabled: false\n    memory: 1MiB\n", "", ""},
		{"data price when paid", "payments:\n  enabled: true\n  pay_to: \"0x000000000000000000000000000000000000dEaD\"\nenvironments:\n  data:\n    price: lots\n",
			"environments.data.price: ", "payments.price"},
		{"body too small for the files", "server:\n  max_body_bytes: 1MiB\n",
			"server.max_body_bytes: 1048576 cannot hold a request at the caps, 11337388 = runtime.max_code_bytes", ""},
		{"body fits smaller files", "server:\n  max_body_bytes: 1MiB\nruntime:\n  max_files_bytes: 512KiB\n", "", ""},
		{"body over 64 MiB", "server:\n  max_body_bytes: 65MiB\n", "server.max_body_bytes: 68157440 is outside 1 KiB..64 MiB", ""},
		{"max files", "runtime:\n  max_files: 2000\n", "runtime.max_files: 2000 is outside 0..1024", ""},
		{"max files bytes", "runtime:\n  max_files_bytes: 65MiB\n", "runtime.max_files_bytes", ""},
		{"languages empty", "environments:\n  data:\n    languages: []\n", "config: environments.data.languages: is empty", ""},
		{"language unknown", "environments:\n  data:\n    languages: [python, ruby]\n",
			`config: environments.data.languages: "ruby" is not a language; use python, javascript, typescript, bash`, ""},
		{"language alias", "environments:\n  python:\n    languages: [Python3]\n",
			`config: environments.python.languages: "Python3": write its canonical name, python`, ""},
		{"language twice", "environments:\n  data:\n    languages: [python, bash, python]\n",
			"config: environments.data.languages: python is listed twice", ""},
		{"typescript alone", "environments:\n  node:\n    enabled: true\n    languages: [typescript, bash]\n",
			"config: environments.node.languages: typescript needs javascript", ""},
		{"node small", "environments:\n  node:\n    enabled: true\n    memory: 128MiB\n",
			"config: environments.node.memory: 134217728 bytes is under 192MiB, the least for an environment that runs javascript", ""},
		{"javascript in python small", "environments:\n  python:\n    languages: [python, javascript]\n",
			"config: environments.python.memory: 134217728 bytes is under 192MiB", ""},
		{"node at 192MiB", "environments:\n  node:\n    enabled: true\n    memory: 192MiB\n", "", ""},
		{"node off skips its languages", "environments:\n  node:\n    enabled: false\n    languages: [ruby]\n", "", ""},
		{"an added environment runs python", "environments:\n  gpu:\n    image: gpu:1\n", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(writeConfig(t, tc.yaml))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			case tc.not != "" && strings.Contains(err.Error(), tc.not):
				t.Fatalf("error %v names %q too", err, tc.not)
			}
		})
	}
}

// TestRunBoundsUseLongestTimeout: the detached run limit and the payment
// window count the longest timeout of the environments turned on.
func TestRunBoundsUseLongestTimeout(t *testing.T) {
	cfg := mustLoad(t, "environments:\n  data:\n    timeout: 60s\n")
	if got := cfg.runLimit(); got != 60*time.Second+runOverhead {
		t.Errorf("run limit %v, want data's 60s and the overhead", got)
	}
	if got := cfg.runBounds().Limit; got != cfg.runLimit() {
		t.Errorf("run bounds %v", got)
	}
	cfg = mustLoad(t, "environments:\n  data:\n    timeout: 60s\n    enabled: false\n")
	if got := cfg.runLimit(); got != 5*time.Second+runOverhead {
		t.Errorf("with data off: run limit %v", got)
	}
	_, err := LoadConfig(writeConfig(t, "payments:\n  enabled: true\n  pay_to: \"0x000000000000000000000000000000000000dEaD\"\n"+
		"  max_timeout_seconds: 150\nenvironments:\n  data:\n    timeout: 60s\n"))
	if err == nil || !strings.Contains(err.Error(), "payments.max_timeout_seconds") || !strings.Contains(err.Error(), "environments.<name>.timeout") {
		t.Fatalf("a 60 s data run with max_timeout_seconds 150: %v; want a refusal naming the keys", err)
	}
}

// TestEnvironmentsForTheAPI: the API is given the environments turned on,
// python first, with their limits, and their prices only with payments
// on; the payments section gets the prices environments set.
func TestEnvironmentsForTheAPI(t *testing.T) {
	cfg := mustLoad(t, "environments:\n  data:\n    price: \"0.02\"\n")
	envs := cfg.apiEnvironments()
	if len(envs) != 3 || envs[0].Name != "python" || envs[1].Name != "data" || envs[2].Name != "node" || envs[1].Timeout != 10*time.Second ||
		envs[1].MemoryBytes != 512<<20 || envs[0].Price != "" || envs[1].Description == "" {
		t.Fatalf("environments %+v", envs)
	}
	cfg.Payments.Enabled = true
	if envs := cfg.apiEnvironments(); envs[0].Price != "0.005" || envs[1].Price != "0.02" {
		t.Errorf("paid: %+v", envs)
	}
	if p := cfg.paymentsConfig().Prices; len(p) != 1 || p["data"] != "0.02" {
		t.Errorf("prices %v", p)
	}
	rc := cfg.runtimeConfig(cfg.Environments["data"])
	if rc.Image != "sandbox-python-data:3.11" || rc.MemoryBytes != units.Bytes(512<<20) || rc.OCIRuntime != "runc" || rc.Instance != "default" ||
		!slices.Equal(rc.Languages, []string{"python"}) {
		t.Errorf("data's runtime config %+v", rc)
	}
	cfg = mustLoad(t, "environments:\n  node:\n    enabled: true\n    languages: [javascript, bash]\n")
	envs = cfg.apiEnvironments()
	if len(envs) != 3 || envs[2].Name != "node" || !slices.Equal(envs[2].Languages, []string{"javascript", "bash"}) ||
		!slices.Equal(envs[0].Languages, []string{"python"}) || !strings.Contains(envs[2].Description, "Node.js 24") {
		t.Errorf("with node on: %+v", envs)
	}
	if rc := cfg.runtimeConfig(cfg.Environments["node"]); !slices.Equal(rc.Languages, []string{"javascript", "bash"}) {
		t.Errorf("node's runtime config runs %v", rc.Languages)
	}
}

// TestRepositoryConfigDocumentsData: config.yaml sets every key of data
// and node, and of python only languages (any other would hide the
// runtime.* key of its name; languages has none).
func TestRepositoryConfigDocumentsData(t *testing.T) {
	v := viper.New()
	v.SetConfigFile("../../config.yaml")
	if err := v.ReadInConfig(); err != nil {
		t.Fatal(err)
	}
	for _, k := range environmentKeys() {
		for _, env := range []string{"data", "node"} {
			if !v.InConfig("environments." + env + "." + k) {
				t.Errorf("config.yaml does not document environments.%s.%s", env, k)
			}
		}
		if set := v.InConfig("environments.python." + k); set != (k == "languages") {
			t.Errorf("config.yaml sets environments.python.%s: %v, want only languages set (the others hide runtime.*)", k, set)
		}
	}
}
