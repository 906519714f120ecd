package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFleetSecretIs64Hex: server.fleet_secret_file holds 64 hex digits
// (openssl rand -hex 32), a newline after them allowed; anything else
// stops the start with an error that names the key and the rule, and a
// file group or others may read is refused with the chmod that fixes it.
func TestFleetSecretIs64Hex(t *testing.T) {
	hex64 := strings.Repeat("0123456789abcdef", 4)
	cases := []struct {
		name, content string
		mode          os.FileMode
		want          string
	}{
		{"openssl rand -hex 32", hex64 + "\n", 0o600, ""},
		{"upper case", strings.ToUpper(hex64), 0o400, ""},
		{"63 digits", hex64[:63], 0o600, "64 hex digits"},
		{"65 digits", hex64 + "0", 0o600, "64 hex digits"},
		{"128 digits", hex64 + hex64, 0o600, "64 hex digits"},
		{"a passphrase of 64 characters", strings.Repeat("correct horse ", 5)[:64], 0o600, "64 hex digits"},
		{"32 raw bytes", string([]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
			17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28}), 0o600, "64 hex digits"},
		{"0x prefix", "0x" + hex64[:62], 0o600, "64 hex digits"},
		{"two lines", hex64[:32] + "\n" + hex64[32:], 0o600, "64 hex digits"},
		{"empty", "", 0o600, "64 hex digits"},
		{"readable by others", hex64, 0o644, "chmod 600"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fleet.secret")
			if err := os.WriteFile(path, []byte(tc.content), tc.mode); err != nil {
				t.Fatal(err)
			}
			secret, err := loadFleetSecret(path)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "" && len(secret) == 0:
				t.Fatal("accepted an empty secret")
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), "server.fleet_secret_file: ") ||
				!strings.Contains(err.Error(), tc.want)):
				t.Fatalf("%v; want an error naming server.fleet_secret_file and %q", err, tc.want)
			}
		})
	}
	if _, err := loadFleetSecret(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "server.fleet_secret_file: ") {
		t.Errorf("a missing file: %v", err)
	}
}
