package runtime

import (
	"testing"

	"sandboxd"
)

// socketProbe is a program that looks for the runner's socket: its
// directory's entries, a connection of its own, a file written there, the
// variable that named it, and what its stdout is.
const socketProbe = `import errno, os, socket, stat
print(sorted(os.listdir('/run/sandboxd')) if os.path.isdir('/run/sandboxd') else 'no directory')
s = socket.socket(socket.AF_UNIX)
try:
    s.connect('/run/sandboxd/io')
    print('connected')
except OSError as e:
    print(errno.errorcode[e.errno])
try:
    open('/run/sandboxd/x', 'w')
    print('wrote')
except OSError as e:
    print(errno.errorcode[e.errno])
print(os.environ.get('SANDBOX_IO'))
print('socket' if stat.S_ISSOCK(os.fstat(1).st_mode) else 'pipe')
`

// Under runc the runner's streams are its own sockets, and the program
// finds nothing of them to use: the socket is gone once the runner has
// connected (no second runner, no forged connection), the directory is
// read-only, and the variable that named it is unset. With io_dir off, the
// attach connection's pipes, and no directory.
func TestSocketLinkSeenFromTheProgram(t *testing.T) {
	for _, c := range []struct {
		name, dir, want string
	}{
		{"socket", "", "[]\nENOENT\nEROFS\nNone\nsocket\n"},
		{"off", ioOff, "no directory\nENOENT\nENOENT\nNone\npipe\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			eachMode(t, func(t *testing.T, mode func(*Config)) {
				d := mustDocker(t, mode, func(cfg *Config) { cfg.OCIRuntime, cfg.IODir = "runc", c.dir })
				res := mustRun(t, d, socketProbe)
				if res.Status != sandboxd.StatusOK || res.Stdout != c.want {
					t.Fatalf("status %q stdout %q stderr %q; want stdout %q", res.Status, res.Stdout, res.Stderr, c.want)
				}
			})
		})
	}
}
