package x402

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadKeyRefusesAnOpenKeyFile: a key file group or others may read or
// write is refused with the chmod that fixes it; 0600 and 0400 load.
func TestLoadKeyRefusesAnOpenKeyFile(t *testing.T) {
	const hexKey = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d\n"
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o602, 0o777} {
		path := filepath.Join(t.TempDir(), "relayer.key")
		if err := os.WriteFile(path, []byte(hexKey), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := LoadKey(path)
		if err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
			t.Errorf("mode %04o: LoadKey = %v, want a refusal saying chmod 600 %s", mode, err, path)
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o400} {
		path := filepath.Join(t.TempDir(), "relayer.key")
		if err := os.WriteFile(path, []byte(hexKey), mode); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadKey(path); err != nil {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
}
