package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"sandboxd"
	"sandboxd/internal/configcheck"
)

// validateEnvironments checks the environments section: the names, python
// turned on, each environment's image, languages, limits and pool (each problem named
// by its key, environments.<name>.<key>), and that the least warm pools of
// every environment fit in the pool's share of the host's memory.
func (c Config) validateEnvironments() []error {
	var errs []error
	if py, ok := c.Environments[sandboxd.DefaultEnvironment]; !ok || !py.Enabled {
		errs = append(errs, fmt.Errorf("config: environments.%s.enabled: python is the default environment and cannot be turned off",
			sandboxd.DefaultEnvironment))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Environments)) {
		if !validEnvironmentName(name) {
			errs = append(errs, fmt.Errorf("config: environments.%s: the name must be 1..%d of a-z, 0-9, '_' and '-'",
				name, maxEnvironmentName))
			continue
		}
		if e := c.Environments[name]; e.Enabled {
			errs = append(errs, c.environmentErrors(name, e)...)
			errs = append(errs, languageErrors(name, e)...)
		}
	}
	if err := c.poolMemoryError(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// environmentErrors checks the environment's runtime.Config
// (runtime.Config.Validate) and names each problem by the environment's
// keys. A problem the runtime.* keys have too (a key every environment
// shares, or a value taken unchanged from runtime.*) is reported once,
// under runtime.*.
func (c Config) environmentErrors(name string, e EnvironmentConfig) []error {
	base := map[string]bool{}
	for _, err := range configErrors(c.Runtime.Config.Validate()) {
		base[err.Error()] = true
	}
	// The same checks of the same values, in the same order: the i-th
	// problem under runtime.* is the i-th under the environment's keys.
	rc := c.runtimeConfig(e)
	asRuntime := configErrors(rc.Validate())
	own := map[string]bool{}
	for _, k := range environmentKeys() {
		own[k] = true
	}
	asEnvironment := configErrors(rc.ValidateNamed(func(key string) string {
		if own[key] {
			return "environments." + name + "." + key
		}
		return "runtime." + key
	}))
	var errs []error
	for i, err := range asEnvironment {
		if !base[asRuntime[i].Error()] {
			errs = append(errs, err)
		}
	}
	return errs
}

// poolMemoryError checks that the least warm pools (pool_size) of every
// environment, each container counted at its memory limit, fit in
// 1/poolMemoryShare of the host's memory. Beyond their least size the
// pools grow within that share at run time, each warm container counted
// at its measured resident size (runtime.MemoryBudget).
func (c Config) poolMemoryError() error {
	host := hostMemory()
	if host <= 0 {
		return nil
	}
	var total int64
	var parts []string
	for _, name := range c.enabledEnvironments() {
		e := c.Environments[name]
		if e.PoolSize == 0 {
			continue
		}
		total += int64(e.PoolSize) * int64(e.MemoryBytes)
		parts = append(parts, fmt.Sprintf("%s: %d warm containers × %d MiB", name, e.PoolSize, e.MemoryBytes/configcheck.MiB))
	}
	if total <= host/poolMemoryShare {
		return nil
	}
	return fmt.Errorf("config: environments.<name>.pool_size: the least warm pools (%s; python's from runtime.pool_size and runtime.memory "+
		"unless environments.python sets them) need %d MiB at their memory limits, more than 1/%d of this host's memory (%d MiB): "+
		"lower a pool_size or a memory", strings.Join(parts, ", "), total/configcheck.MiB, poolMemoryShare, host/configcheck.MiB)
}
