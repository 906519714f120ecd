//go:build linux

package ledger_test

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sandboxd"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
)

// TestLedgerReadOnly: a ledger on a read-only filesystem is refused at
// open, naming the file, so the service does not start taking payments it
// cannot record.
func TestLedgerReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := ledgertest.Tmpfs(t, "1m")
	path := filepath.Join(dir, "ledger.db")
	l, err := ledger.OpenFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	ro := t.TempDir()
	if err := syscall.Mount(dir, ro, "", syscall.MS_BIND, ""); err != nil {
		ledgertest.NeedMount(t, "cannot bind-mount: "+err.Error())
	}
	t.Cleanup(func() { syscall.Unmount(ro, 0) })
	if err := syscall.Mount("", ro, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		ledgertest.NeedMount(t, "cannot make a bind mount read-only: "+err.Error())
	}
	_, err = ledger.OpenFile(ctx, filepath.Join(ro, "ledger.db"))
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(err.Error(), filepath.Join(ro, "ledger.db")) {
		t.Fatalf("ledger.OpenFile on a read-only filesystem = %v, want CodeUnavailable naming the file", err)
	}
}
