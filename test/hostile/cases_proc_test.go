package hostile

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"sandboxd"
)

// procProbe gathers what a program sees of /proc and /sys, and whether it
// can write there, as one JSON object. Reads never block (O_NONBLOCK), so a
// readable /proc/kmsg cannot hang it; a read shows at most 4 KiB.
const procProbe = `import errno, json, os
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno))
def read(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            return os.read(fd, 4096).decode('utf-8', 'replace')
        finally:
            os.close(fd)
    except OSError as e:
        return err(e)
def write(path, data=b'1'):
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, data)
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
    'secret_reads': {p: read(p) for p in ['/proc/kcore', '/proc/kmsg', '/dev/kmsg', '/dev/mem', '/sys/firmware/dmi/tables/DMI', '/proc/sched_debug', '/proc/keys']},
    'writes': {p: write(p) for p in ['/proc/sys/kernel/hostname', '/proc/sys/vm/drop_caches', '/proc/sysrq-trigger',
                                     '/sys/fs/cgroup/memory/memory.limit_in_bytes', '/sys/fs/cgroup/pids/pids.max',
                                     '/sys/fs/cgroup/cgroup.procs', '/sys/kernel/mm/transparent_hugepage/enabled']}
              | {'/proc/1/oom_score_adj (-1000)': write('/proc/1/oom_score_adj', b'-1000')},
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
		want: answer{status: statuses(sandboxd.StatusOK), exit: []int{0}, check: probeCheck()},
		// gVisor's oom_score_adj is its own kernel's, not the host's.
		per: map[string][]answer{
			"runsc": {{status: statuses(sandboxd.StatusOK), exit: []int{0}, check: probeCheck("/proc/1/oom_score_adj (-1000)")}},
		},
	}}
}

// probeCheck returns a check that the sandbox sees only itself: its own
// PID 1, not the host's name, machine ID or processes, nothing secret, and
// no way to write to the kernel's or its cgroups' settings, but for the
// writes named, which that runtime keeps to itself.
func probeCheck(writable ...string) func(sandboxd.Result) []string {
	return func(res sandboxd.Result) []string {
		var p probe
		if err := json.Unmarshal([]byte(res.Stdout), &p); err != nil {
			return []string{fmt.Sprintf("probe output is not JSON: %v: %q", err, clip(res.Stdout))}
		}
		d := p.foreignProcesses()
		d = append(d, hostFacts().visibleIn(p, res.Stdout)...)
		return append(d, p.allowed(writable)...)
	}
}

// foreignProcesses lists the processes visible that are not the sandbox's.
func (p probe) foreignProcesses() []string {
	const runner = "/opt/sandbox/run.py"
	var d []string
	if !strings.Contains(p.PID1, runner) {
		d = append(d, fmt.Sprintf("/proc/1/cmdline = %q, want the sandbox's own runner", p.PID1))
	}
	for _, c := range p.Cmdlines {
		if !strings.Contains(c, runner) {
			d = append(d, fmt.Sprintf("a process not of the sandbox is visible: cmdline %q", c))
		}
	}
	return d
}

// allowed lists the secrets read and the settings written, but for the
// writes named.
func (p probe) allowed(writable []string) []string {
	var d []string
	for path, got := range p.SecretReads {
		// Docker masks some with /dev/null (empty); the rest are refused.
		if got != "" && !denied(got) {
			d = append(d, fmt.Sprintf("%s is readable: %q", path, clip(got)))
		}
	}
	for path, got := range p.Writes {
		if !denied(got) && !slices.Contains(writable, path) {
			d = append(d, fmt.Sprintf("%s: %s, want it refused", path, got))
		}
	}
	for path, got := range p.Mkdirs {
		if !denied(got) {
			d = append(d, fmt.Sprintf("mkdir %s: %s, want it refused", path, got))
		}
	}
	return d
}

// denied reports whether a probe's answer is one of the errors that mean
// "not for you": read-only, permission, no such thing, not allowed.
func denied(got string) bool {
	return slices.Contains([]string{"EROFS", "EACCES", "EPERM", "ENOENT", "ENXIO", "EINVAL", "ENOTDIR"}, got)
}

// host is what identifies the host: its name, machine ID and PID 1's
// program.
type host struct {
	hostname, machineID, pid1 string
}

// hostFacts reads the host's identifying facts (those it has).
func hostFacts() host {
	var h host
	h.hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/etc/machine-id"); err == nil {
		h.machineID = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/1/cmdline"); err == nil {
		// The program's path only: arguments may be short, common words.
		h.pid1, _, _ = strings.Cut(string(b), "\x00")
	}
	return h
}

// visibleIn lists the host's facts that the probe saw.
func (h host) visibleIn(p probe, raw string) []string {
	var d []string
	for _, name := range p.Hostnames {
		if h.hostname != "" && name == h.hostname {
			d = append(d, fmt.Sprintf("the host's name %q is visible in the sandbox", name))
		}
	}
	if h.machineID != "" && strings.Contains(raw, h.machineID) {
		d = append(d, "the host's machine ID is visible in the sandbox")
	}
	if h.pid1 != "" && strings.Contains(raw, h.pid1) {
		d = append(d, fmt.Sprintf("the host's PID 1 (%q) is visible in the sandbox", h.pid1))
	}
	return d
}
