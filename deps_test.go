package sandboxd_test

import (
	"os"
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

// TestArchitectureMapsEveryPackage keeps ARCHITECTURE.md's table of
// packages whole: every package of the product (test harnesses under
// test/ aside) has its row, named `dir/`.
func TestArchitectureMapsEveryPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		dir, inner := strings.CutPrefix(pkg, "sandboxd/")
		if !inner || strings.HasPrefix(dir, "test/") {
			continue
		}
		if !strings.Contains(string(doc), "`"+dir+"/`") {
			t.Errorf("ARCHITECTURE.md's table of packages has no row for %s/", dir)
		}
	}
}
