package main

import (
	"cmp"
	"time"

	"sandboxd/httpapi"
	"sandboxd/internal/configcheck"
	"sandboxd/internal/units"
	"sandboxd/sessions"
	"sandboxd/x402"
)

// SessionsConfig holds the sessions.* keys: sessions that keep one
// interpreter across calls, with a capacity of their own.
type SessionsConfig struct {
	// Enabled is sessions.enabled: false turns the session routes off (404).
	Enabled bool `mapstructure:"enabled"`
	// Max is sessions.max, the sessions open at once.
	Max int `mapstructure:"max"`
	// MaxPerPayer is sessions.max_per_payer, the sessions one wallet may
	// hold at once (paid mode); 0 means no cap of its own.
	MaxPerPayer int `mapstructure:"max_per_payer"`
	// MaxPerClient is sessions.max_per_client, the sessions one client
	// address (an IPv6 /64) may hold at once (free mode); 0 means no cap of
	// its own.
	MaxPerClient int `mapstructure:"max_per_client"`
	// Memory is sessions.memory, the memory limits of the sessions open at
	// once in all; 0 means max × the largest environment's memory, at
	// most the sessions' share of the host (sessionsMemory).
	Memory units.Bytes `mapstructure:"memory"`
	// IdleTimeout is sessions.idle_timeout, from the end of the last call.
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
	// MaxLifetime is sessions.max_lifetime, from the start.
	MaxLifetime time.Duration `mapstructure:"max_lifetime"`
	// OpenPrice is sessions.open_price, the price of opening a session;
	// "" means payments.price.
	OpenPrice string `mapstructure:"open_price"`
	// QueueWait is sessions.queue_wait: how long a call waits for the one
	// running in its session, then 409.
	QueueWait time.Duration `mapstructure:"queue_wait"`
}

// sessionMemoryShare bounds the sessions' memory budget to 1/share of the
// host's memory, beside the warm pools' share (poolMemoryShare).
const sessionMemoryShare = poolMemoryShare

// validateSessions checks the sessions.* keys, each once.
func (c Config) validateSessions() []error {
	p := configcheck.Problems{Prefix: "config: "}
	s := c.Sessions
	p.Check(s.Max >= 1 && s.Max <= 1024, "sessions.max", "%d is outside 1..1024", s.Max)
	p.Check(s.MaxPerPayer >= 0 && s.MaxPerPayer <= s.Max, "sessions.max_per_payer", "%d is outside 0 (no cap)..sessions.max (%d)", s.MaxPerPayer, s.Max)
	// Above sessions.max it caps nothing more: no error, so that lowering max
	// alone never stops a start.
	p.Check(s.MaxPerClient >= 0 && s.MaxPerClient <= 1024, "sessions.max_per_client", "%d is outside 0 (no cap)..1024", s.MaxPerClient)
	p.Check(s.IdleTimeout >= time.Second && s.IdleTimeout <= 24*time.Hour, "sessions.idle_timeout", "%v is outside 1s..24h", s.IdleTimeout)
	p.Check(s.MaxLifetime >= s.IdleTimeout && s.MaxLifetime <= 24*time.Hour, "sessions.max_lifetime",
		"%v is outside sessions.idle_timeout (%v)..24h", s.MaxLifetime, s.IdleTimeout)
	p.Check(s.QueueWait >= 0 && s.QueueWait <= time.Minute, "sessions.queue_wait", "%v is outside 0s..60s", s.QueueWait)
	if s.OpenPrice != "" {
		_, err := x402.ParsePrice(s.OpenPrice)
		p.Check(err == nil, "sessions.open_price", "%q is not \"\" (payments.price) or a price in asset units such as \"0.01\": %v", s.OpenPrice, err)
	}
	largest := c.largestSessionMemory()
	p.Check(s.Memory == 0 || int64(s.Memory) >= largest, "sessions.memory",
		"%d MiB cannot hold one session of the largest environment (%d MiB); set 0 for the default", int64(s.Memory)/configcheck.MiB, largest/configcheck.MiB)
	if host := hostMemory(); host > 0 && s.Memory > 0 {
		p.Check(int64(s.Memory) <= host/sessionMemoryShare, "sessions.memory",
			"%d MiB is more than 1/%d of this host's memory (%d MiB), the sessions' share beside the warm pools'",
			int64(s.Memory)/configcheck.MiB, sessionMemoryShare, host/configcheck.MiB)
	}
	return p.Errs()
}

// largestSessionMemory is the largest memory limit of the environments
// turned on.
func (c Config) largestSessionMemory() int64 {
	var largest int64
	for _, name := range c.enabledEnvironments() {
		largest = max(largest, int64(c.Environments[name].MemoryBytes))
	}
	return largest
}

// sessionsMemory is the sessions' memory budget: sessions.memory, or by
// default max × the largest environment's memory, cut to the sessions'
// share of the host (but never below one session of the largest).
func (c Config) sessionsMemory() int64 {
	if c.Sessions.Memory > 0 {
		return int64(c.Sessions.Memory)
	}
	largest := c.largestSessionMemory()
	budget := int64(c.Sessions.Max) * largest
	if host := hostMemory(); host > 0 {
		budget = max(min(budget, host/sessionMemoryShare), largest)
	}
	return budget
}

// sessionsConfig is the sessions package's configuration.
func (c Config) sessionsConfig(observer sessions.Observer) sessions.Config {
	s := c.Sessions
	envs := map[string]int64{}
	for _, name := range c.enabledEnvironments() {
		envs[name] = int64(c.Environments[name].MemoryBytes)
	}
	maxPerPayer, maxPerClient := s.MaxPerPayer, 0
	if !c.Payments.Enabled {
		// Free sessions have no owner to count: their clients are.
		maxPerPayer, maxPerClient = 0, s.MaxPerClient
	}
	return sessions.Config{Max: s.Max, MaxPerPayer: maxPerPayer, MaxPerClient: maxPerClient, Memory: c.sessionsMemory(), Environments: envs,
		IdleTimeout: s.IdleTimeout, MaxLifetime: s.MaxLifetime, QueueWait: s.QueueWait, Observer: observer}
}

// sessionSettings describe the sessions to the API. The open price is
// resolved here: "" is payments.price, whatever the environment opened
// (the gate would quote an empty price at the environment's).
func (c Config) sessionSettings() httpapi.SessionSettings {
	return httpapi.SessionSettings{OpenPrice: cmp.Or(c.Sessions.OpenPrice, c.Payments.Price), Max: c.Sessions.Max,
		IdleTimeout: c.Sessions.IdleTimeout, MaxLifetime: c.Sessions.MaxLifetime}
}

// queueWait is the longest a request waits for what it needs: a sandbox
// slot (runtime.queue_wait) or, with sessions on, its session's turn.
func (c Config) queueWait() time.Duration {
	if c.Sessions.Enabled {
		return max(c.Runtime.QueueWait, c.Sessions.QueueWait)
	}
	return c.Runtime.QueueWait
}
