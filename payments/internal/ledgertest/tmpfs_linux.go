package ledgertest

import (
	"os"
	"syscall"
	"testing"
)

// NeedMount skips (or, when CI=true, fails) a test that must mount a
// filesystem, when it cannot.
func NeedMount(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; CI must run the payments tests as root with CAP_SYS_ADMIN", why)
	}
	t.Skipf("%s; run as root to test the ledger on a full or read-only disk", why)
}

// Tmpfs mounts a tmpfs of size (e.g. "256k") on a new directory, unmounted
// at cleanup (after the ledgers opened later are closed).
func Tmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		NeedMount(t, "not root, so no tmpfs can be mounted")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		NeedMount(t, "cannot mount a tmpfs: "+err.Error())
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting the test tmpfs %s: %v", dir, err)
		}
	})
	return dir
}
