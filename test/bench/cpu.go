package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of the CPU times in /proc and in process accounting
// (both USER_HZ, 100 on Linux).
const userHZ = 100

// The processes CPU time is split by, in the order the report lists them.
// "steal" is not a process: it is the time the VM's hypervisor ran
// something else while this host had work (/proc/stat's steal), so a
// figure per answer moves with it however the stack behaves.
var cpuGroups = []string{"dockerd", "containerd", "shim", "runc", "program", "sandboxd", "bench client", "other", "steal"}

// group names the part of the stack a process belongs to, by its command
// name (dockerd re-executed as libnetwork's hook shows as "exe").
func group(comm string, pid, self int) string {
	switch {
	case pid == self:
		return "bench client"
	case comm == "dockerd" || comm == "exe":
		return "dockerd"
	case comm == "containerd":
		return "containerd"
	case strings.HasPrefix(comm, "containerd-shim"):
		return "shim"
	case strings.HasPrefix(comm, "runc"):
		return "runc"
	case strings.HasPrefix(comm, "python"):
		return "program"
	case strings.HasPrefix(comm, "sandboxd"): // sandboxd, or a build under another name (-binary)
		return "sandboxd"
	}
	return "other"
}

// cpuSplit is the host's CPU time over a window, in total and by group.
type cpuSplit struct {
	host   time.Duration
	groups map[string]time.Duration
	// ended counts, by group, the processes that ended in the window.
	ended    map[string]int
	exitedOK bool // process accounting counted the processes that ended
}

// proc is one process's CPU time, keyed by pid and start time.
type proc struct {
	comm  string
	ticks int64
}

// procKey tells a process from a later one with the same pid.
type procKey struct {
	pid   int
	start int64
}

// cpuAccount is a window of CPU accounting in progress.
type cpuAccount struct {
	self     int
	busy0    int64
	steal0   int64
	procs0   map[procKey]proc
	acctFile string
	acctOn   bool
}

// startCPU begins a window: it reads /proc/stat and every process, and
// turns process accounting on (root only), so processes that end within
// the window (runc, the programs, the shims) are counted too.
func startCPU() *cpuAccount {
	a := &cpuAccount{self: os.Getpid(), procs0: procs()}
	a.busy0, a.steal0 = hostBusy()
	a.acctFile = filepath.Join(os.TempDir(), fmt.Sprintf("sandboxd-bench-%d.acct", a.self))
	_ = os.Remove(a.acctFile)
	if f, err := os.Create(a.acctFile); err == nil {
		f.Close()
		a.acctOn = syscall.Acct(a.acctFile) == nil
	}
	return a
}

// stop ends the window and returns the split.
func (a *cpuAccount) stop() cpuSplit {
	procs1 := procs()
	busy1, steal1 := hostBusy()
	if a.acctOn {
		_, _, _ = syscall.Syscall(syscall.SYS_ACCT, 0, 0, 0) // acct(NULL): off
	}
	s := cpuSplit{host: ticks(busy1 - a.busy0), groups: map[string]time.Duration{}, ended: map[string]int{}, exitedOK: a.acctOn}
	for k, p := range procs1 {
		s.groups[group(p.comm, k.pid, a.self)] += ticks(p.ticks - a.procs0[k].ticks)
	}
	if a.acctOn {
		for _, e := range readAcct(a.acctFile) {
			t := e.ticks
			for k, p := range a.procs0 { // it ran before the window: count the rest only
				if k.pid == e.pid && p.comm == e.comm {
					t -= p.ticks
				}
			}
			g := group(e.comm, e.pid, a.self)
			s.groups[g] += ticks(max(t, 0))
			s.ended[g]++
		}
	}
	_ = os.Remove(a.acctFile)
	var known time.Duration
	for g, d := range s.groups {
		if g != "other" && g != "steal" {
			known += d
		}
	}
	s.groups["steal"] = ticks(steal1 - a.steal0)
	s.groups["other"] = s.host - known - s.groups["steal"]
	return s
}

// ticks converts USER_HZ ticks to a duration.
func ticks(n int64) time.Duration { return time.Duration(n) * time.Second / userHZ }

// hostBusy is the host's CPU time spent on anything but idling, in ticks,
// and of it the time stolen by the hypervisor (steal).
func hostBusy() (busy, steal int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return busyOf(line)
}

// busyOf reads /proc/stat's first line, "cpu user nice system idle iowait
// irq softirq steal guest guest_nice": the busy ticks (all but idle and
// iowait; guest is in user already) and the steal among them.
func busyOf(line string) (busy, steal int64) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return 0, 0
	}
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i != 3 && i != 4 && i < 8 {
			busy += n
		}
		if i == 7 {
			steal = n
		}
	}
	return busy, steal
}

// procs reads every process's command name and CPU time (utime+stime).
func procs() map[procKey]proc {
	out := map[procKey]proc{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		open, closing := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || closing < open {
			continue
		}
		f := strings.Fields(string(b[closing+1:]))
		if len(f) < 20 {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		start, _ := strconv.ParseInt(f[19], 10, 64)
		out[procKey{pid, start}] = proc{comm: string(b[open+1 : closing]), ticks: ut + st}
	}
	return out
}

// acctEntry is one ended process from the accounting file.
type acctEntry struct {
	pid   int
	comm  string
	ticks int64
}

// readAcct parses a process accounting file (struct acct_v3, 64 bytes).
func readAcct(path string) []acctEntry {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []acctEntry
	for ; len(b) >= 64; b = b[64:] {
		if b[1] != 3 { // ac_version
			continue
		}
		le := binary.LittleEndian
		comm := b[48:64]
		if i := bytes.IndexByte(comm, 0); i >= 0 {
			comm = comm[:i]
		}
		out = append(out, acctEntry{
			pid:   int(le.Uint32(b[16:20])),
			comm:  string(comm),
			ticks: compT(le.Uint16(b[32:34])) + compT(le.Uint16(b[34:36])),
		})
	}
	return out
}

// compT decodes a comp_t: 13 bits of mantissa, 3 of base-8 exponent.
func compT(v uint16) int64 {
	return int64(v&0x1fff) << (3 * (v >> 13))
}
