package main

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadConfig writes arbitrary text as a configuration file and loads
// it. LoadConfig must never panic, and a configuration it accepts must pass
// Validate: no value outside its documented range ever reaches the service.
func FuzzLoadConfig(f *testing.F) {
	if repo, err := os.ReadFile("../../config.yaml"); err == nil {
		f.Add(string(repo))
	}
	for _, seed := range []string{
		"",
		"{}\n",
		"server:\n  addr: \"127.0.0.1:0\"\n",
		"runtime:\n  timeout: 2s\n  memory: 256MiB\n  cpus: 0.5\n",
		"runtime:\n  tmpfs: 32m\n  max_output_bytes: 1MiB\n  pids: 8\n",
		"runtime:\n  memory: 9223372036854775807\n",
		"runtime:\n  memory: 8589934592GiB\n",
		"runtime:\n  memory: -1\n",
		"runtime:\n  cpus: NaN\n",
		"runtime:\n  cpus: .inf\n",
		"runtime:\n  cpus: 1e309\n",
		"runtime:\n  timeout: 9223372036s\n",
		"runtime:\n  timeout: -5s\n",
		"runtime:\n  queue_wait: 1h\n",
		"runtime:\n  max_concurrency: 1.5\n",
		"runtime:\n  pool_size: [1, 2]\n",
		"runtime:\n  instance: \"\"\n",
		"runtime:\n  instance: \"a/b\"\n",
		"runtime: 5\n",
		"runtime:\n  timeoutt: 2s\n",
		"server:\n  max_body_bytes: 2048\nruntime:\n  max_code_bytes: 4096\n",
		"server:\n  addr: 8080\n",
		"server:\n  log_level: ~\n",
		"payments:\n  enabled: true\n",
		"payments:\n  enabled: true\n  pay_to: \"0x0000000000000000000000000000000000000001\"\n  price: \"-1\"\n",
		"payments:\n  enabled: true\n  pay_to: \"0x0000000000000000000000000000000000000001\"\n  price: \"1e100000000\"\n",
		"payments:\n  enabled: maybe\n",
		"a: &a [*a, *a]\n",
		"a: &a [x, x]\nb: &b [*a, *a, *a, *a]\nc: &c [*b, *b, *b, *b]\n",
		"!!binary gIGC\n",
		"---\n---\n",
		"\t- not yaml",
		"runtime:\n  memory: !!float 1e3\n",
		"Runtime:\n  Timeout: 3s\n",
		"environments: 5\n",
		"environments: [1]\n",
		"environments:\n  data: 5\n",
		"environments:\n  data: [a]\n",
		"environments:\n  data:\n    memory: -1\n    pool_max: 1e9\n",
		"environments:\n  \"\":\n    image: x\n",
		"environments:\n  python:\n    enabled: false\n",
		"environments:\n  x.y:\n    image: x\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(path)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("LoadConfig refused %q with an empty message", text)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("LoadConfig accepted %q, yet Validate says: %v", text, err)
		}
	})
}
