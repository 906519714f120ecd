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
