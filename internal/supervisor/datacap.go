package supervisor

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// capData sets the data limit of a stub that said ready: soft = hard =
// VmData + (data − RssAnon). What the stub reserved and never touched (V8's
// code range) is not charged to the program; the anonymous memory it holds
// counts against the limit; everything the program allocates beyond fails
// at once. The processes the program starts inherit the stub's limit. A
// limit of 0 sets nothing.
func capData(proc string, pid int, data int64) error {
	if data <= 0 {
		return nil
	}
	_, vmData, anon, err := procStatus(proc, pid)
	if err != nil {
		return fmt.Errorf("supervisor: data limit: %w", err)
	}
	limit := dataCap(vmData, anon, data)
	rl := unix.Rlimit{Cur: limit, Max: limit}
	if err := unix.Prlimit(pid, unix.RLIMIT_DATA, &rl, nil); err != nil {
		return fmt.Errorf("supervisor: data limit: %w", err)
	}
	return nil
}

// dataCap is the data limit of a warm stub with vmData and anon KiB of
// data and anonymous resident memory, for a data limit of data bytes.
func dataCap(vmData, anon, data int64) uint64 {
	limit := vmData*1024 + data - anon*1024
	return uint64(max(limit, 0))
}
