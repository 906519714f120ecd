package hostile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"sandboxd"
)

// matplotlibCaches forces matplotlib to rebuild its font cache, which it
// saves into its config directory (MPLCONFIGDIR, /opt/sandbox/matplotlib,
// on the read-only root), and writes a config and a cache file wherever
// matplotlib would look: the home (HOME is /tmp), its config and cache
// directories, its data. Then it draws and saves a chart, which must still
// work. Each write prints where it landed or how it was refused.
const matplotlibCaches = `import errno, os
import matplotlib
import matplotlib.font_manager as fm
import matplotlib.pyplot as plt
def attempt(label, path):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write('backend: TkAgg\n')
        print(label, 'written in /tmp' if path.startswith('/tmp/') else 'written at ' + path)
    except OSError as e:
        print(label, errno.errorcode[e.errno])
try:
    fm._load_fontmanager(try_read_cache=False)
    print('font-cache-rebuild saved')
except OSError as e:
    print('font-cache-rebuild', errno.errorcode[e.errno])
attempt('home-config', os.path.expanduser('~/.config/matplotlib/matplotlibrc'))
attempt('home-cache', os.path.expanduser('~/.cache/matplotlib/fontlist-v330.json'))
attempt('config-dir', os.path.join(matplotlib.get_configdir(), 'matplotlibrc'))
attempt('cache-dir', os.path.join(matplotlib.get_cachedir(), 'fontlist-v330.json'))
attempt('data-dir', os.path.join(matplotlib.get_data_path(), 'matplotlibrc'))
plt.plot([1, 2, 3])
plt.savefig('/tmp/plot.png')
with open('/tmp/plot.png', 'rb') as f:
    print('png', f.read(8) == b'\x89PNG\r\n\x1a\n')
`

// matplotlibCachesCase runs matplotlibCaches: every write outside /tmp is
// refused (runc answers EROFS, the read-only root; gVisor checks the
// permission first: EACCES), the home's land in the tmpfs, and the chart is
// drawn.
func matplotlibCachesCase() hostileCase {
	want := func(refused string) answer {
		out := fmt.Sprintf("font-cache-rebuild %[1]s\nhome-config written in /tmp\nhome-cache written in /tmp\n"+
			"config-dir %[1]s\ncache-dir %[1]s\ndata-dir %[1]s\npng True\n", refused)
		return answer{status: statuses(sandboxd.StatusOK), exit: []int{0}, stdout: []string{out}}
	}
	return hostileCase{
		name: "matplotlib-caches-on-read-only-root", imports: "import matplotlib.pyplot\n", code: matplotlibCaches,
		want: want("EROFS"),
		per:  map[string][]answer{"runsc": {want("EACCES")}},
	}
}

// pandasProbe reads the system's files with pandas, as a program looking
// for the host would: the users, the mounts, its PID 1's status and
// environment.
const pandasProbe = `import json
import pandas as pd
users = pd.read_csv('/etc/passwd', sep=':', header=None)
mounts = pd.read_csv('/proc/self/mounts', sep=' ', header=None)
status = pd.read_csv('/proc/1/status', sep=':', header=None, index_col=0).squeeze('columns').str.strip()
with open('/proc/1/environ') as f:
    environ = pd.Series(f.read().split('\0')).str.partition('=')
print(json.dumps({
    'users': {str(n): int(u) for n, u in zip(users[0], users[2])},
    'mountpoints': sorted(set(mounts[1])),
    'pid1': [status['Name'], status['Uid'].split()[0]],
    'environ': {k: v for k, v in zip(environ[0], environ[2]) if k},
}))
`

// pandasSeen is pandasProbe's JSON.
type pandasSeen struct {
	Users       map[string]int    `json:"users"`
	Mountpoints []string          `json:"mountpoints"`
	PID1        []string          `json:"pid1"`
	Environ     map[string]string `json:"environ"`
}

// pandasProbeCase runs pandasProbe: harmless, since the sandbox holds
// nothing of the host (pandasHarmless).
func pandasProbeCase() hostileCase {
	return hostileCase{
		name: "pandas-reads-system-files", imports: "import pandas\n", code: pandasProbe,
		want: answer{status: statuses(sandboxd.StatusOK), exit: []int{0}, check: pandasHarmless},
	}
}

// pandasHarmless checks what pandasProbe saw: the image's users (its
// sandbox user, none of the host's own), only the mounts Docker makes of
// the container's own and the runner's socket directory (no other host
// directory or socket bound in), a PID 1 that
// is the sandbox's Python as user 10001, and no variable of the host's
// environment.
func pandasHarmless(res sandboxd.Result) []string {
	var p pandasSeen
	if err := json.Unmarshal([]byte(res.Stdout), &p); err != nil {
		return []string{fmt.Sprintf("probe output is not JSON: %v: %q", err, clip(res.Stdout))}
	}
	var d []string
	if p.Users["sandbox"] != 10001 {
		d = append(d, fmt.Sprintf("/etc/passwd has no sandbox user 10001: %v", p.Users))
	}
	for name, uid := range hostUsers() {
		if _, ok := p.Users[name]; ok {
			d = append(d, fmt.Sprintf("the host's user %s (%d) is in the sandbox's /etc/passwd", name, uid))
		}
	}
	for _, m := range p.Mountpoints {
		if !containerMount(m) {
			d = append(d, fmt.Sprintf("mount point %s is not one of the container's own", m))
		}
	}
	if len(p.PID1) != 2 || p.PID1[0] != "python3" || p.PID1[1] != "10001" {
		d = append(d, fmt.Sprintf("PID 1 is %q, want python3 as uid 10001", p.PID1))
	}
	return append(d, hostEnvironIn(p.Environ)...)
}

// hostUsers are the host's own users: those of its /etc/passwd with a uid
// from 100 to 65533, which a Debian base system does not have.
func hostUsers() map[string]int {
	users := map[string]int{}
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return users
	}
	defer f.Close()
	for s := bufio.NewScanner(f); s.Scan(); {
		fields := strings.Split(s.Text(), ":")
		if len(fields) < 3 {
			continue
		}
		if uid, err := strconv.Atoi(fields[2]); err == nil && uid >= 100 && uid < 65534 && fields[0] != "sandbox" {
			users[fields[0]] = uid
		}
	}
	return users
}

// containerMount reports whether a mount point is one Docker makes of the
// container's own: its root, /tmp, /dev, /proc and /sys and what is under
// them, and the three files of /etc it writes.
func containerMount(m string) bool {
	switch m {
	case "/", "/tmp", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf":
		return true
	case "/run/sandboxd":
		// The runner's socket directory under runc, the container's own,
		// read-only, and empty once the runner has connected (runtime's
		// TestSocketLinkSeenFromTheProgram).
		return true
	}
	for _, top := range []string{"/dev", "/proc", "/sys"} {
		if m == top || strings.HasPrefix(m, top+"/") {
			return true
		}
	}
	return false
}

// hostEnvironIn lists the variables of this test's environment, the
// host's, that the sandbox's PID 1 has too with the same value, but for
// those the image sets itself (imageEnv), which a host may well share.
func hostEnvironIn(environ map[string]string) []string {
	var d []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if !imageEnv(k) && environ[k] == v && v != "" {
			d = append(d, fmt.Sprintf("the host's %s is in the sandbox's environment", k))
		}
	}
	return d
}

// imageEnv reports whether the images set the variable themselves
// (images/python/recipe.sh and data/recipe.sh), or the service does.
func imageEnv(k string) bool {
	switch {
	case k == "PATH" || k == "LANG" || k == "HOME" || k == "HOSTNAME":
		return true
	case strings.HasPrefix(k, "PYTHON") || strings.HasPrefix(k, "MPL") || strings.HasPrefix(k, "SANDBOX_"):
		return true
	}
	return strings.HasSuffix(k, "_NUM_THREADS")
}
