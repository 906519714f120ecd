package main

import (
	"slices"
	"strings"
	"testing"
)

// TestCORSOriginsDecodeAndValidate: server.cors_origins is a list in the file and a
// comma-separated string in the environment; each entry is "*" or an origin.
func TestCORSOriginsDecodeAndValidate(t *testing.T) {
	cfg, err := LoadConfig(writeConfig(t, "server:\n  page: false\n  cors_origins: [\"https://a.example\", \"http://localhost:3000\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Page || !slices.Equal(cfg.Server.CORSOrigins, []string{"https://a.example", "http://localhost:3000"}) {
		t.Errorf("page %v, cors_origins %q", cfg.Server.Page, cfg.Server.CORSOrigins)
	}
	for _, yaml := range []string{"server:\n  cors_origins: [1]\n", "server:\n  cors_origins: {a: b}\n", "server:\n  cors_origins: 5\n"} {
		if _, err := LoadConfig(writeConfig(t, yaml)); err == nil || !strings.Contains(err.Error(), "server.cors_origins: ") ||
			!strings.Contains(err.Error(), "is not a list of strings") {
			t.Errorf("%q: %v, want refused as not a list of strings", yaml, err)
		}
	}
	t.Setenv("SANDBOX_SERVER_CORS_ORIGINS", "https://b.example,https://c.example")
	cfg, err = LoadConfig(writeConfig(t, "{}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Server.CORSOrigins, []string{"https://b.example", "https://c.example"}) {
		t.Errorf("from the environment: %q", cfg.Server.CORSOrigins)
	}
	for _, bad := range []string{"https://a.example/", "https://a.example/path", "a.example", "ftp://a.example", "https://u@a.example", "null"} {
		t.Setenv("SANDBOX_SERVER_CORS_ORIGINS", bad)
		if _, err := LoadConfig(writeConfig(t, "{}\n")); err == nil || !strings.Contains(err.Error(), "server.cors_origins") {
			t.Errorf("cors_origins %q: %v, want refused", bad, err)
		}
	}
}

// TestCORSOriginsAutoFollowsPayments: the default, "auto", lets no other
// origin in when calls are free and any when they are paid; a list set in
// the file is kept as it is.
func TestCORSOriginsAutoFollowsPayments(t *testing.T) {
	for _, c := range []struct {
		set  []string
		paid bool
		want []string
	}{
		{[]string{corsAuto}, false, []string{}},
		{[]string{corsAuto}, true, []string{"*"}},
		{[]string{"*"}, false, []string{"*"}},
		{[]string{}, true, []string{}},
		{[]string{"https://a.example"}, true, []string{"https://a.example"}},
	} {
		cfg := Config{Server: ServerConfig{CORSOrigins: c.set}, Payments: PaymentsConfig{Enabled: c.paid}}
		cfg.resolveCORS()
		if !slices.Equal(cfg.Server.CORSOrigins, c.want) || cfg.Server.CORSOrigins == nil {
			t.Errorf("cors_origins %q, paid %v: %q, want %q", c.set, c.paid, cfg.Server.CORSOrigins, c.want)
		}
	}
	cfg, err := LoadConfig(writeConfig(t, "{}\n"))
	if err != nil || len(cfg.Server.CORSOrigins) != 0 {
		t.Errorf("free default: %q, %v; want no origin", cfg.Server.CORSOrigins, err)
	}
}
