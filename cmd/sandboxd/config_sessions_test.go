package main

import (
	"strings"
	"testing"
	"time"
)

// TestSessionsConfigValidation: each sessions.* key is checked once, the
// error naming it.
func TestSessionsConfigValidation(t *testing.T) {
	saved := hostMemory
	t.Cleanup(func() { hostMemory = saved })
	hostMemory = func() int64 { return 8 << 30 } // 4 GiB for the sessions
	for _, tc := range []struct{ yaml, want string }{
		{"sessions:\n  max: 4\n", ""},
		{"sessions:\n  enabled: false\n  max: 4\n", ""},
		{"sessions:\n  max: 0\n", "sessions.max: 0 is outside 1..1024"},
		{"sessions:\n  max: 2\n  max_per_payer: 3\n", "sessions.max_per_payer: 3 is outside"},
		{"sessions:\n  max_per_payer: -1\n", "sessions.max_per_payer"},
		{"sessions:\n  idle_timeout: 0s\n", "sessions.idle_timeout"},
		{"sessions:\n  idle_timeout: 10m\n  max_lifetime: 5m\n", "sessions.max_lifetime: 5m0s is outside sessions.idle_timeout"},
		{"sessions:\n  max_lifetime: 48h\n", "sessions.max_lifetime"},
		{"sessions:\n  queue_wait: 2m\n", "sessions.queue_wait"},
		{"sessions:\n  open_price: \"free\"\n", "sessions.open_price"},
		{"sessions:\n  open_price: \"0.01\"\n", ""},
		{"sessions:\n  memory: 256MiB\n", "sessions.memory: 256 MiB cannot hold one session of the largest environment (512 MiB)"},
		{"sessions:\n  memory: 5GiB\n", "more than 1/2 of this host's memory"},
		{"sessions:\n  memory: lots\n", "sessions.memory: lots is not a size"},
		{"sessions:\n  max: many\n", "sessions.max: many is not a whole number"},
	} {
		_, err := LoadConfig(writeConfig(t, tc.yaml))
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// TestSessionsMemoryDefault: by default the budget is max × the largest
// environment's memory, cut to half the host, never below one session;
// free sessions have no per-payer cap; a session's turn counts in the
// queue wait that bounds a paid request.
func TestSessionsMemoryDefault(t *testing.T) {
	saved := hostMemory
	t.Cleanup(func() { hostMemory = saved })
	hostMemory = func() int64 { return 16 << 30 }
	cfg, err := LoadConfig(writeConfig(t, "sessions:\n  max: 4\n  queue_wait: 9s\n"))
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.sessionsConfig(nil)
	if sc.Memory != 4*512<<20 || sc.MaxPerPayer != 0 || sc.Environments["data"] != 512<<20 || sc.Environments["python"] != 128<<20 {
		t.Fatalf("sessions config %+v", sc)
	}
	if cfg.runBounds().QueueWait != 9*time.Second {
		t.Fatalf("the run bounds' queue wait %v ignores the sessions'", cfg.runBounds().QueueWait)
	}
	hostMemory = func() int64 { return 1 << 30 }
	if got := cfg.sessionsMemory(); got != 512<<20 {
		t.Fatalf("on a 1 GiB host the default budget is %d, want half the host", got)
	}
	cfg.Payments.Enabled = true
	if cfg.sessionsConfig(nil).MaxPerPayer != 2 {
		t.Fatal("paid sessions lost their per-payer cap")
	}
}
