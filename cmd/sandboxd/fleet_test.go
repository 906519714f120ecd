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

// TestAdvertiseURLIsAReplicaAddress: server.advertise_url follows the rule
// every replica holds the registry's addresses to (httpapi.ReplicaURL): a
// base URL, at an IP address listed in server.trusted_proxies when any is
// listed. Anything else is refused at start, naming the key.
func TestAdvertiseURLIsAReplicaAddress(t *testing.T) {
	const proxies = "  trusted_proxies: [\"10.0.0.10\", \"10.0.0.0/29\", \"fd00::/64\"]\n"
	cases := []struct {
		name, url, proxies, want string
	}{
		{"an address listed", "http://10.0.0.3:8080", proxies, ""},
		{"https, trailing slash", "https://10.0.0.3:8443/", proxies, ""},
		{"IPv6 in a listed block", "http://[fd00::11]:8080", proxies, ""},
		{"an address not listed", "http://10.0.0.11:8080", proxies, "not among server.trusted_proxies"},
		{"no proxies listed: an address", "http://10.0.0.3:8080", "", ""},
		{"no proxies listed: a name", "http://replica-a.internal:8080", "", ""},
		{"no proxies listed: a path", "http://replica-a.internal:8080/api", "", "not a base URL"},
		{"a name", "http://replica-a.internal:8080", proxies, "not by an IP address"},
		{"an outside host over https", "https://collect.example", proxies, "not by an IP address"},
		{"a path", "http://10.0.0.3:8080/api", proxies, "not a base URL"},
		{"userinfo", "http://u:p@10.0.0.3:8080", proxies, "not a base URL"},
		{"a query", "http://10.0.0.3:8080?x=1", proxies, "not a base URL"},
		{"a fragment", "http://10.0.0.3:8080#x", proxies, "not a base URL"},
		{"another scheme", "ftp://10.0.0.3:8080", proxies, "not a base URL"},
		{"no scheme", "10.0.0.3:8080", proxies, "not a base URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(writeConfig(t, "server:\n  advertise_url: \""+tc.url+"\"\n"+tc.proxies))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), "server.advertise_url: ") ||
				!strings.Contains(err.Error(), tc.want)):
				t.Fatalf("%v; want an error naming server.advertise_url and %q", err, tc.want)
			}
		})
	}
}
