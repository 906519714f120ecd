package sandboxd_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAdaptersNeverImportEachOther keeps what doc.go says: runtime,
// payments and httpapi depend on this package, never on each other, and
// x402 on none of them.
func TestAdaptersNeverImportEachOther(t *testing.T) {
	forbidden := map[string][]string{
		"sandboxd/runtime":  {"sandboxd/payments", "sandboxd/httpapi", "sandboxd/x402"},
		"sandboxd/payments": {"sandboxd/runtime", "sandboxd/httpapi"},
		"sandboxd/httpapi":  {"sandboxd/runtime", "sandboxd/payments"},
		"sandboxd/x402":     {"sandboxd/runtime", "sandboxd/payments", "sandboxd/httpapi", "sandboxd/sessions"},
	}
	for pkg, never := range forbidden {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, n := range never {
				if dep == n || strings.HasPrefix(dep, n+"/") {
					t.Errorf("%s depends on %s (doc.go: the adapters never depend on each other)", pkg, dep)
				}
			}
		}
	}
}
