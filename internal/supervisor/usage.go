package supervisor

import (
	"bytes"
	"errors"
	"os"
	"strconv"
)

// procTick is the unit of the CPU times of /proc/<pid>/stat (USER_HZ,
// fixed at 100 on Linux whatever the kernel's HZ), in milliseconds.
const procTick = 10

// errGone is a process that has ended (a zombie, or reaped): its usage is
// wait4's.
var errGone = errors.New("supervisor: the process has ended")

// procCPU returns the CPU time of process pid and of the children it has
// reaped, user plus system, in milliseconds, from /proc/<pid>/stat;
// errGone once it has ended.
func procCPU(proc string, pid int) (int64, error) {
	b, err := os.ReadFile(proc + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, errGone
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime, stime, cutime and cstime (fields 14 to 17) of
// a /proc/<pid>/stat line. The command name (field 2) may hold spaces and
// parentheses, so the fields are counted from its last ")".
func parseStatCPU(b []byte) (int64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("supervisor: malformed stat")
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is field 3 (the state), so field n is fields[n-3].
	if len(fields) < 15 {
		return 0, errors.New("supervisor: short stat")
	}
	if s := string(fields[0]); s == "Z" || s == "X" {
		return 0, errGone
	}
	var sum int64
	for _, f := range fields[11:15] {
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil || n < 0 {
			return 0, errors.New("supervisor: malformed stat")
		}
		sum += n
	}
	return sum * procTick, nil
}

// procStatus returns the fields of /proc/<pid>/status the supervisor
// reads, in KiB: VmHWM, VmData and RssAnon (0 when missing, as gVisor may).
func procStatus(proc string, pid int) (hwm, data, anon int64, err error) {
	b, err := os.ReadFile(proc + "/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, 0, err
	}
	return statusKB(b, "VmHWM:"), statusKB(b, "VmData:"), statusKB(b, "RssAnon:"), nil
}

// statusKB returns the value of a "<key> <n> kB" line of a status file, or
// 0 when it has none.
func statusKB(b []byte, key string) int64 {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte(key))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || n < 0 {
			return 0
		}
		return n
	}
	return 0
}

// resetPeak resets the peak resident size of process pid (clear_refs 5),
// so that VmHWM is a call's own; false where the kernel does not let it
// (gVisor), and the peak is then the session's so far.
func resetPeak(proc string, pid int) bool {
	return os.WriteFile(proc+"/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0) == nil
}
