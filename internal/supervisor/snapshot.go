package supervisor

import (
	"time"

	"golang.org/x/sys/unix"
)

// snapshot returns what a session's call starts with: the signature of
// every regular file under root, once the clock that stamps file times
// has moved past the newest not written in (those are compared by
// content), so that a file the call changes, even at once and to the same
// size, gets another signature. No file is read.
func snapshot(root string, written map[string]inFile) map[string]signature {
	found, _ := walk(root)
	sigs := make(map[string]signature, len(found))
	var newest int64
	for _, e := range found {
		sigs[e.name] = e.sig
		if _, in := written[e.name]; !in {
			newest = max(newest, e.sig.mtime)
		}
	}
	settle(newest)
	return sigs
}

// settle waits until CLOCK_REALTIME_COARSE (a change's mtime is never
// before it) reads more than newest (ns) plus 1 ms, at most 20 ms; not at
// all for a time further ahead, which only a program's utime sets.
func settle(newest int64) {
	target := newest + int64(time.Millisecond)
	now := coarse()
	if target-now > int64(20*time.Millisecond) {
		return
	}
	end := time.Now().Add(20 * time.Millisecond)
	for now <= target && time.Now().Before(end) {
		time.Sleep(500 * time.Microsecond)
		now = coarse()
	}
}

// coarse reads CLOCK_REALTIME_COARSE in ns.
func coarse() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts) != nil {
		return time.Now().UnixNano()
	}
	return ts.Nano()
}
