package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestConfigFileIsBounded: the largest, endless, deepest and most
// self-multiplying configuration files are refused within a second,
// naming the file, having allocated under 64 MB: a device read forever
// (/dev/zero behind a .yaml name), a file over 1 MiB, a YAML alias bomb,
// YAML nested 100,000 deep.
func TestConfigFileIsBounded(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	bomb := "a: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\n"
	for i, prev := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		name := string(rune('b' + i))
		bomb += name + ": &" + name + " [" + strings.Repeat("*"+prev+",", 8) + "*" + prev + "]\n"
	}
	bomb += "server: {addr: *i}\n"
	zero := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, path, want string }{
		{"endless device", zero, "not a regular file"},
		{"2 MiB file", write("big.yaml", "# "+strings.Repeat("x", 2<<20)+"\n"), "over the limit of 1048576 bytes"},
		{"alias bomb", write("bomb.yaml", bomb), "config: reading"},
		{"100,000 levels", write("deep.yaml", "server: "+strings.Repeat("[", 100_000)+strings.Repeat("]", 100_000)+"\n"), "config: reading"},
		{"no known extension", write("config.txt", "server: {}\n"), "extension"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			go func() { _, err := LoadConfig(c.path); done <- err }()
			select {
			case err := <-done:
				runtime.ReadMemStats(&after)
				grew := after.TotalAlloc - before.TotalAlloc
				t.Logf("%s: %d bytes allocated: %.200v", c.name, grew, err)
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
					t.Errorf("LoadConfig(%s) = %.300v, want an error naming the file with %q", c.name, err, c.want)
				}
				if grew > 64<<20 {
					t.Errorf("allocated %d bytes, want under 64 MB", grew)
				}
			case <-time.After(time.Second):
				t.Fatalf("LoadConfig(%s) still reading after 1s", c.name)
			}
		})
	}
}

// TestHugeEnvironmentValueIsQuotedShort: a SANDBOX_* variable as long as
// the kernel allows (128 KiB) with a bad value is refused by an error of a
// line, not one that copies the value into the log.
func TestHugeEnvironmentValueIsQuotedShort(t *testing.T) {
	t.Setenv("SANDBOX_RUNTIME_TIMEOUT", strings.Repeat("9", 128<<10-len("SANDBOX_RUNTIME_TIMEOUT=")-1))
	path := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(path)
	if err == nil {
		t.Fatal("a 128 KiB timeout was accepted")
	}
	if msg := err.Error(); len(msg) > 512 || !strings.Contains(msg, "runtime.timeout") || !strings.Contains(msg, "bytes)") {
		t.Fatalf("error of %d bytes (%.200s...), want a short one naming runtime.timeout and the value's length", len(msg), msg)
	}
}
