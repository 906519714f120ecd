package ledger

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"sandboxd"
)

// lockLedger takes an exclusive lock on the file next to the ledger at path
// (path + ".lock"), without waiting: a second service on the same ledger
// would release the first one's live reservations in its crash recovery,
// letting one payment buy two runs. The lock is an flock on an open file
// description, so it holds against other processes and other opens in this
// one, and the kernel drops it when the holder exits, however it exits. It
// is released by closing the returned file.
func lockLedger(op, path string) (*os.File, error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "cannot open the ledger's lock file "+name)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, fmt.Sprintf(
				"the ledger %s is held by another sandboxd (it holds the lock %s): run one service per ledger, "+
					"or give this one another payments.ledger", path, name))
		}
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "cannot lock the ledger's lock file "+name)
	}
	// The holder's pid, for the operator looking for it.
	if f.Truncate(0) == nil {
		_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
	}
	return f, nil
}
