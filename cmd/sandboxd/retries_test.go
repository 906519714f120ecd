package main

import (
	"strings"
	"testing"
	"time"

	"sandboxd/payments/retries"
)

// paidYAML turns payments on (the retries keys are checked only then),
// followed by the payments.retries lines of retries.
func paidYAML(retries string) string {
	return "payments:\n  enabled: true\n  pay_to: \"0x000000000000000000000000000000000000dEaD\"\n" + retries
}

// TestRetriesConfigValidation: each payments.retries key is checked once,
// by retries.Config.Validate, the error naming it; retries off, or
// payments off, check none of them.
func TestRetriesConfigValidation(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"defaults", paidYAML(""), ""},
		{"keep", paidYAML("  retries:\n    keep: 1h\n"), ""},
		{"keep below the validity", paidYAML("  retries:\n    keep: 3m\n"),
			"payments.retries.keep: 3m0s is outside 4m0s..24h0m0s"},
		{"keep above a day", paidYAML("  retries:\n    keep: 25h\n"), "payments.retries.keep"},
		{"wait", paidYAML("  retries:\n    wait: 2m\n"), "payments.retries.wait: 2m0s is outside 1s..1m0s"},
		{"answer over 64 MiB", paidYAML("  retries:\n    max_answer_bytes: 65MiB\n"),
			"payments.retries.max_answer_bytes"},
		{"budget below one answer", paidYAML("  retries:\n    max_bytes: 1MiB\n"),
			"payments.retries.max_bytes: 1048576 is outside max_answer_bytes (16777216)"},
		{"enabled not bool", paidYAML("  retries:\n    enabled: maybe\n"),
			"payments.retries.enabled: maybe is not true or false"},
		{"wait not a duration", paidYAML("  retries:\n    wait: soon\n"), "payments.retries.wait: soon is not a duration"},
		{"unknown key", paidYAML("  retries:\n    ttl: 1m\n"), "unknown key(s) payments.retries.ttl"},
		{"null", paidYAML("  retries:\n    keep: ~\n"), "payments.retries.keep: is null"},
		{"retries off", paidYAML("  retries:\n    enabled: false\n    wait: 2m\n"), ""},
		{"payments off", "payments:\n  retries:\n    wait: 2m\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(writeConfig(t, tc.yaml))
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRetriesKeepFollowsValidity: keep's default (0s) is 10m, or the
// terms' validity plus a minute when that is longer, so raising
// max_timeout_seconds alone never makes the defaults invalid.
func TestRetriesKeepFollowsValidity(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want time.Duration
	}{
		{paidYAML(""), retries.DefaultKeep},
		{paidYAML("  max_timeout_seconds: 1800\n"), 31 * time.Minute},
		{paidYAML("  max_timeout_seconds: 1800\n  retries:\n    keep: 2h\n"), 2 * time.Hour},
	} {
		cfg, err := LoadConfig(writeConfig(t, tc.yaml))
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		if got := cfg.retriesConfig().Keep; got != tc.want {
			t.Errorf("%q: keep %s, want %s", tc.yaml, got, tc.want)
		}
	}
}

// TestRetriesFromTheEnvironment: every payments.retries key is bound to
// SANDBOX_PAYMENTS_RETRIES_<KEY>, with the file's syntaxes, over the file.
func TestRetriesFromTheEnvironment(t *testing.T) {
	t.Setenv("SANDBOX_PAYMENTS_RETRIES_KEEP", "15m")
	t.Setenv("SANDBOX_PAYMENTS_RETRIES_WAIT", "5s")
	t.Setenv("SANDBOX_PAYMENTS_RETRIES_MAX_ANSWER_BYTES", "1MiB")
	t.Setenv("SANDBOX_PAYMENTS_RETRIES_MAX_BYTES", "1GiB")
	cfg, err := LoadConfig(writeConfig(t, paidYAML("  retries:\n    wait: 30s\n")))
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.retriesConfig()
	if r.Keep != 15*time.Minute || r.Wait != 5*time.Second || r.MaxAnswerBytes != 1<<20 || r.MaxBytes != 1<<30 ||
		!cfg.retriesOn() {
		t.Fatalf("retries %+v, on %v", r, cfg.retriesOn())
	}
	t.Setenv("SANDBOX_PAYMENTS_RETRIES_ENABLED", "false")
	if cfg, err = LoadConfig(writeConfig(t, paidYAML(""))); err != nil || cfg.retriesOn() {
		t.Fatalf("SANDBOX_PAYMENTS_RETRIES_ENABLED=false: on %v, %v", cfg.retriesOn(), err)
	}
	t.Setenv("SANDBOX_PAYMENTS_RETRIES_ENABLED", "true")
	t.Setenv("SANDBOX_PAYMENTS_ENABLED", "false")
	if cfg, err = LoadConfig(writeConfig(t, "{}\n")); err != nil || cfg.retriesOn() {
		t.Fatalf("payments off: retries on %v, %v", cfg.retriesOn(), err)
	}
}
