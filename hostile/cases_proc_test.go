package hostile

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"sandboxd"
)

// procProbe gathers what a program sees of /proc and /sys, and whether it
// can write there, as one JSON object. Reads never block (O_NONBLOCK), so a
// readable /proc/kmsg cannot hang it; a read shows at most 4 KiB.
const procProbe = `import errno, json, os
def err(e):
    return 'E' + errno.errorcode.get(e.errno, str(e.errno))
def read(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            return os.read(fd, 4096).decode('utf-8', 'replace')
        finally:
            os.close(fd)
    except OSError as e:
        return err(e)
def write(path):
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, b'1')
        finally:
            os.close(fd)
        return 'written'
    except OSError as e:
        return err(e)
def mkdir(path):
    try:
        os.mkdir(path)
        return 'made'
    except OSError as e:
        return err(e)
pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
print(json.dumps({
    'pid1': read('/proc/1/cmdline'),
    'cmdlines': [read(f'/proc/{p}/cmdline') for p in pids],
    'hostnames': [read('/etc/hostname').strip(), read('/proc/sys/kernel/hostname').strip(), os.uname().nodename],
    'machine_id': read('/etc/machine-id').strip(),
    'secret_reads': {p: read(p) for p in ['/proc/kcore', '/proc/kmsg', '/dev/kmsg', '/dev/mem', '/proc/1/environ',
                                          '/sys/firmware/dmi/tables/DMI', '/proc/sched_debug', '/proc/keys']},
    'writes': {p: write(p) for p in ['/proc/sys/kernel/hostname', '/proc/sys/vm/drop_caches', '/proc/sysrq-trigger',
                                     '/sys/fs/cgroup/memory/memory.limit_in_bytes', '/sys/fs/cgroup/pids/pids.max',
                                     '/sys/fs/cgroup/cgroup.procs', '/sys/kernel/mm/transparent_hugepage/enabled',
                                     '/proc/1/oom_score_adj']},
    'mkdirs': {p: mkdir(p) for p in ['/sys/fs/cgroup/memory/escape', '/sys/fs/cgroup/escape', '/proc/sys/escape']},
}))
`

// probe is procProbe's JSON.
type probe struct {
	PID1        string            `json:"pid1"`
	Cmdlines    []string          `json:"cmdlines"`
	Hostnames   []string          `json:"hostnames"`
	MachineID   string            `json:"machine_id"`
	SecretReads map[string]string `json:"secret_reads"`
	Writes      map[string]string `json:"writes"`
	Mkdirs      map[string]string `json:"mkdirs"`
}

// procCases probe /proc and /sys for the host.
func procCases() []hostileCase {
	return []hostileCase{{
		name: "proc-sys-probe",
		code: procProbe,
		want: answer{status: statuses(sandboxd.StatusOK), exit: []int{0}, check: checkProbe},
	}}
}

// checkProbe asserts that the sandbox sees only itself: its own PID 1, not
// the host's name, machine ID or processes, nothing secret, and no way to
// write to the kernel's or its cgroups' settings.
func checkProbe(tb testing.TB, res sandboxd.Result) {
	tb.Helper()
	var p probe
	if err := json.Unmarshal([]byte(res.Stdout), &p); err != nil {
		tb.Fatalf("probe output is not JSON: %v: %q", err, clip(res.Stdout))
	}
	const runner = "/opt/sandbox/run.py"
	if !strings.Contains(p.PID1, runner) {
		tb.Errorf("/proc/1/cmdline = %q, want the sandbox's own runner", p.PID1)
	}
	for _, c := range p.Cmdlines {
		if !strings.Contains(c, runner) {
			tb.Errorf("a process not of the sandbox is visible: cmdline %q", c)
		}
	}
	host := hostFacts(tb)
	for _, h := range p.Hostnames {
		if h == host.hostname {
			tb.Errorf("the host's name %q is visible in the sandbox", h)
		}
	}
	if host.machineID != "" && strings.Contains(res.Stdout, host.machineID) {
		tb.Errorf("the host's machine ID is visible in the sandbox")
	}
	if host.pid1 != "" && strings.Contains(res.Stdout, host.pid1) {
		tb.Errorf("the host's PID 1 (%q) is visible in the sandbox", host.pid1)
	}
	for path, got := range p.SecretReads {
		// Docker masks some with /dev/null (empty); the rest are refused.
		if got != "" && !denied(got) {
			tb.Errorf("%s is readable: %q", path, clip(got))
		}
	}
	for path, got := range p.Writes {
		if !denied(got) {
			tb.Errorf("%s: %s, want it refused", path, got)
		}
	}
	for path, got := range p.Mkdirs {
		if !denied(got) {
			tb.Errorf("mkdir %s: %s, want it refused", path, got)
		}
	}
}

// denied reports whether a probe's answer is one of the errors that mean
// "not for you": read-only, permission, no such thing, not allowed.
func denied(got string) bool {
	return slices.Contains([]string{"EROFS", "EACCES", "EPERM", "ENOENT", "ENXIO", "EINVAL", "ENOTDIR"}, got)
}

// host is what identifies the host: its name, machine ID and PID 1.
type host struct {
	hostname, machineID, pid1 string
}

// hostFacts reads the host's identifying facts (those it has).
func hostFacts(tb testing.TB) host {
	tb.Helper()
	var h host
	var err error
	if h.hostname, err = os.Hostname(); err != nil {
		tb.Fatalf("hostname: %v", err)
	}
	if b, err := os.ReadFile("/etc/machine-id"); err == nil {
		h.machineID = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/1/cmdline"); err == nil {
		h.pid1 = strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
		if i := strings.IndexByte(h.pid1, ' '); i > 0 {
			h.pid1 = h.pid1[:i] // the program's path: arguments may be short words
		}
	}
	return h
}
