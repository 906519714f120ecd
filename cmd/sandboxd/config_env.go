package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"sandboxd"
	"sandboxd/internal/units"
	"sandboxd/runtime"
)

// EnvironmentConfig holds the environments.<name>.* keys: one environment's
// image, languages, limits, warm pool and price. A key an environment
// leaves out takes its default: the built-in one of data and node
// (defaultConfig), and for python and any environment the operator adds,
// the runtime.* key of the same name (so SANDBOX_RUNTIME_TIMEOUT still sets
// python's timeout), or python for languages, which has no runtime.* key.
// Price "" is payments.price.
type EnvironmentConfig struct {
	// Enabled is environments.<name>.enabled: false turns the environment
	// off (python cannot be).
	Enabled bool `mapstructure:"enabled"`
	// Image is environments.<name>.image.
	Image string `mapstructure:"image"`
	// Languages is environments.<name>.languages: the canonical names of
	// the languages the environment runs, its default first; its image
	// must list each (runtime.Config.Languages).
	Languages []string `mapstructure:"languages"`
	// Timeout is environments.<name>.timeout, the wall-clock limit of a run.
	Timeout time.Duration `mapstructure:"timeout"`
	// MemoryBytes is environments.<name>.memory.
	MemoryBytes units.Bytes `mapstructure:"memory"`
	// NanoCPUs is environments.<name>.cpus.
	NanoCPUs units.NanoCPUs `mapstructure:"cpus"`
	// PidsLimit is environments.<name>.pids.
	PidsLimit int64 `mapstructure:"pids"`
	// TmpfsBytes is environments.<name>.tmpfs.
	TmpfsBytes units.Bytes `mapstructure:"tmpfs"`
	// PoolSize is environments.<name>.pool_size.
	PoolSize int `mapstructure:"pool_size"`
	// PoolMax is environments.<name>.pool_max.
	PoolMax int `mapstructure:"pool_max"`
	// Price is environments.<name>.price, per call in asset units; ""
	// means payments.price.
	Price string `mapstructure:"price"`
}

// environmentDescriptions describe the built-in environments to callers
// (discovery); an environment the operator adds is described by its image.
var environmentDescriptions = map[string]string{
	sandboxd.DefaultEnvironment: "Python 3.11 with the standard library only",
	sandboxd.DataEnvironment:    "Python 3.11 with numpy, pandas, matplotlib and scipy; figures are returned as PNG files",
	nodeEnvironment:             "JavaScript on Node.js 24, TypeScript (transpiled, not type-checked) and Bash",
}

// nodeEnvironment is the built-in environment of JavaScript and TypeScript.
const nodeEnvironment = "node"

// maxEnvironmentName is the longest environment name.
const maxEnvironmentName = 32

// validEnvironmentName: 1..32 of a-z, 0-9, '_' and '-'.
func validEnvironmentName(name string) bool {
	if name == "" || len(name) > maxEnvironmentName {
		return false
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' && r != '-' {
			return false
		}
	}
	return true
}

// environmentKeys are the keys of one environment, from EnvironmentConfig's
// tags.
func environmentKeys() []string {
	return slices.Sorted(maps.Keys(environmentSettings(EnvironmentConfig{})))
}

// environmentSettings is e as a map of its keys, the form the decode
// reads: keys are listed and values copied by the tags alone.
func environmentSettings(e EnvironmentConfig) map[string]any {
	var m map[string]any
	if err := mapstructure.Decode(e, &m); err != nil {
		panic(err) // a struct always decodes into a map of its fields
	}
	return m
}

// bindEnvironments binds the environment variables of every key of every
// environment that is built in, named by the file, or named by a variable
// (SANDBOX_ENVIRONMENTS_<NAME>_<KEY>), so that each reaches its nested key.
func bindEnvironments(v *viper.Viper) error {
	names := map[string]bool{sandboxd.DefaultEnvironment: true}
	for name := range defaultConfig().Environments {
		names[name] = true
	}
	if m, ok := v.Get("environments").(map[string]any); ok {
		for name := range m {
			names[name] = true
		}
	}
	for _, name := range environmentsFromVariables(os.Environ()) {
		names[name] = true
	}
	for name := range names {
		for _, k := range environmentKeys() {
			if err := v.BindEnv("environments." + name + "." + k); err != nil {
				return fmt.Errorf("config: environments.%s.%s: %w", name, k, err)
			}
		}
	}
	return nil
}

// environmentsFromVariables returns the environment names that variables
// of the form SANDBOX_ENVIRONMENTS_<NAME>_<KEY> set, NAME lowercased.
func environmentsFromVariables(environ []string) []string {
	var names []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, "SANDBOX_ENVIRONMENTS_")
		if !ok {
			continue
		}
		for _, k := range environmentKeys() {
			if n, ok := strings.CutSuffix(rest, "_"+strings.ToUpper(k)); ok && n != "" {
				names = append(names, strings.ToLower(n))
				break
			}
		}
	}
	return names
}

// resolveEnvironments fills in the keys each environment leaves out (see
// EnvironmentConfig); set reports whether the file or the environment set
// a key. python is always there.
func (c *Config) resolveEnvironments(set func(key string) bool) {
	defaults := defaultConfig().Environments
	if c.Environments == nil {
		c.Environments = map[string]EnvironmentConfig{}
	}
	names := slices.Collect(maps.Keys(c.Environments))
	names = append(names, slices.Collect(maps.Keys(defaults))...)
	names = append(names, sandboxd.DefaultEnvironment)
	slices.Sort(names)
	names = slices.Compact(names)
	for _, name := range names {
		base, builtIn := defaults[name]
		if !builtIn {
			base = c.Runtime.environment()
		}
		left := environmentSettings(base)
		maps.DeleteFunc(left, func(k string, _ any) bool { return set("environments." + name + "." + k) })
		e := c.Environments[name]
		if err := mapstructure.Decode(left, &e); err != nil {
			panic(err) // the values are of the fields' own types
		}
		c.Environments[name] = e
	}
}

// environment is the environment the runtime.* keys describe: python's
// defaults, and those of an environment the operator adds.
func (rt RuntimeConfig) environment() EnvironmentConfig {
	return EnvironmentConfig{Enabled: true, Image: rt.Image, Languages: []string{sandboxd.LanguagePython}, Timeout: rt.Timeout, MemoryBytes: rt.MemoryBytes,
		NanoCPUs: rt.NanoCPUs, PidsLimit: rt.PidsLimit, TmpfsBytes: rt.TmpfsBytes, PoolSize: rt.PoolSize, PoolMax: rt.PoolMax}
}

// runtimeConfig is the runtime.Config of the environment: its image,
// limits and pool, and the runtime.* keys every environment shares
// (oci_runtime, max_output_bytes, instance, max_files...).
func (c Config) runtimeConfig(e EnvironmentConfig) runtime.Config {
	rc := c.Runtime.Config
	rc.Image, rc.Languages, rc.Timeout, rc.MemoryBytes, rc.NanoCPUs = e.Image, e.Languages, e.Timeout, e.MemoryBytes, e.NanoCPUs
	rc.PidsLimit, rc.TmpfsBytes, rc.PoolSize, rc.PoolMax = e.PidsLimit, e.TmpfsBytes, e.PoolSize, e.PoolMax
	return rc
}

// enabledEnvironments are the names of the environments turned on, python
// first, then by name.
func (c Config) enabledEnvironments() []string {
	var names []string
	for name, e := range c.Environments {
		if e.Enabled && name != sandboxd.DefaultEnvironment {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return append([]string{sandboxd.DefaultEnvironment}, names...)
}

// longestTimeout is the longest timeout of the environments turned on: it
// bounds every run (the detached run limit, the payment window).
func (c Config) longestTimeout() time.Duration {
	longest := c.Runtime.Timeout
	for _, name := range c.enabledEnvironments() {
		longest = max(longest, c.Environments[name].Timeout)
	}
	return longest
}

// price is the price of a call in the environment: its own, or
// payments.price.
func (c Config) price(name string) string {
	if p := c.Environments[name].Price; p != "" {
		return p
	}
	return c.Payments.Price
}

// apiEnvironments describes the environments turned on, for the API.
func (c Config) apiEnvironments() []sandboxd.Environment {
	var out []sandboxd.Environment
	for _, name := range c.enabledEnvironments() {
		e := c.Environments[name]
		desc, ok := environmentDescriptions[name]
		if !ok {
			desc = "Python in the image " + e.Image
		}
		price := ""
		if c.Payments.Enabled {
			price = c.price(name)
		}
		out = append(out, sandboxd.Environment{Name: name, Description: desc, Languages: e.Languages, Timeout: e.Timeout,
			MemoryBytes: int64(e.MemoryBytes), Price: price})
	}
	return out
}

// prices are the prices of the environments turned on that set their own
// (payments.Config.Prices).
func (c Config) prices() map[string]string {
	out := map[string]string{}
	for _, name := range c.enabledEnvironments() {
		if p := c.Environments[name].Price; p != "" {
			out[name] = p
		}
	}
	return out
}
