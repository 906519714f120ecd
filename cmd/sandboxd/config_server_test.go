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

// TestClientKeysValidate: the body rate, the per-client caps, the public
// URL and the trusted proxies are each refused out of range, naming the
// key, and read from the environment too.
func TestClientKeysValidate(t *testing.T) {
	bad := map[string]string{
		"server:\n  min_body_rate: 10\n":                                   "server.min_body_rate",
		"server:\n  body_grace: -1s\n":                                     "server.body_grace",
		"server:\n  max_conns_per_client: -1\n":                            "server.max_conns_per_client",
		"server:\n  max_conns_per_client: 4\n  max_bodies_per_client: 8\n": "server.max_bodies_per_client",
		"server:\n  public_url: \"sandbox.example.com\"\n":                 "server.public_url",
		"server:\n  public_url: \"ftp://sandbox.example.com\"\n":           "server.public_url",
		"server:\n  public_url: \"https://sandbox.example.com/?a=b\"\n":    "server.public_url",
		"server:\n  public_url: \"https://sandbox.example.com/#top\"\n":    "server.public_url",
		"server:\n  public_url: \"https://u:p@sandbox.example.com\"\n":     "server.public_url",
		"server:\n  trusted_proxies: [\"10.0.0.0/33\"]\n":                  "server.trusted_proxies",
		"server:\n  trusted_proxies: [\"proxy.local\"]\n":                  "server.trusted_proxies",
	}
	for yaml, key := range bad {
		if _, err := LoadConfig(writeConfig(t, yaml)); err == nil || !strings.Contains(err.Error(), key+": ") {
			t.Errorf("%q: %v, want refused naming %s", yaml, err, key)
		}
	}
	t.Setenv("SANDBOX_SERVER_TRUSTED_PROXIES", "127.0.0.1,10.0.0.0/8")
	t.Setenv("SANDBOX_SERVER_PUBLIC_URL", "https://sandbox.example.com/api/")
	t.Setenv("SANDBOX_SERVER_MIN_BODY_RATE", "2KiB")
	cfg, err := LoadConfig(writeConfig(t, "{}\n"))
	if err != nil {
		t.Fatal(err)
	}
	proxies, _ := trustedProxies(cfg.Server.TrustedProxies)
	public, _ := publicURL(cfg.Server.PublicURL)
	if len(proxies) != 2 || proxies[0].String() != "127.0.0.1/32" || proxies[1].String() != "10.0.0.0/8" ||
		public != "https://sandbox.example.com/api" || cfg.Server.MinBodyRate != 2048 {
		t.Errorf("from the environment: proxies %v, public_url %q, min_body_rate %d", proxies, public, cfg.Server.MinBodyRate)
	}
}
