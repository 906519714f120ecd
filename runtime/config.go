package runtime

import (
	"slices"
	"time"

	"sandboxd/internal/configcheck"
	"sandboxd/internal/units"
)

// Config is the runtime section of the service's configuration: the limits
// and identity every container of a Docker runner gets. cmd/sandboxd decodes
// the runtime.* keys straight into it (the mapstructure tags name the keys;
// a units.Bytes reads a size such as 128MiB, units.NanoCPUs a CPU count such
// as 0.5), so this package never sees how they were read. Validate checks them.
type Config struct {
	// Image is the image every run uses, e.g. "sandbox-python:3.11".
	Image string `mapstructure:"image"`
	// Languages are the canonical names of the languages the environment
	// runs (environments.<name>.languages, which cmd/sandboxd validates);
	// empty means python. Health refuses an image whose
	// runnerproto.LabelLanguages label lacks one of them.
	Languages []string `mapstructure:"-"`
	// OCIRuntime names the OCI runtime (runc, runsc, crun); empty means the
	// daemon's default.
	OCIRuntime string `mapstructure:"oci_runtime"`
	// IODir is where the service makes each runner's socket (socket.go),
	// in a directory of its own that the container mounts: the program and
	// its output then skip dockerd and the container's shim. The Docker
	// daemon must see it at the same path (a daemon on this host, reached
	// over a Unix socket, and a service that is not itself in a container
	// without it). It must be the service user's own, mode 700. Empty means
	// sandboxd-io-<uid> in the system's temporary directory; "off" keeps the attach connection. Under an OCI runtime
	// other than runc, or a daemon reached over TCP, the attach connection
	// is used whatever it says.
	IODir string `mapstructure:"io_dir"`
	// Timeout is the wall-clock limit, counted from the program's start: the
	// runner's ack, or the hand-over of the code when no ack comes.
	Timeout time.Duration `mapstructure:"timeout"`
	// MemoryBytes caps memory, and memory plus swap, so nothing is swapped.
	MemoryBytes units.Bytes `mapstructure:"memory"`
	// NanoCPUs caps CPU time in billionths of a CPU (1e9 is one CPU); the
	// key runtime.cpus gives it in CPUs.
	NanoCPUs units.NanoCPUs `mapstructure:"cpus"`
	// PidsLimit caps the processes and threads alive at once.
	PidsLimit int64 `mapstructure:"pids"`
	// TmpfsBytes sizes the only writable place, /tmp, and caps any file's size.
	TmpfsBytes units.Bytes `mapstructure:"tmpfs"`
	// MaxOutputBytes caps each of stdout and stderr; past it the run is killed.
	MaxOutputBytes units.Bytes `mapstructure:"max_output_bytes"`
	// MaxFiles caps the files in a job may carry and the files out a run
	// returns with their content (past it, files out are listed by name and
	// size). 0 takes no files in and returns none with content.
	MaxFiles int `mapstructure:"max_files"`
	// MaxFilesBytes caps the bytes of all files in, and of all the content
	// of the files out. The files in are written into /tmp, so TmpfsBytes
	// must hold them.
	MaxFilesBytes units.Bytes `mapstructure:"max_files_bytes"`
	// PoolSize is how many containers are kept started ahead of the runs,
	// each with its runner waiting for a program; 0 creates a container for
	// each run when it comes.
	PoolSize int `mapstructure:"pool_size"`
	// PoolMax is the most containers the pool grows to while runs arrive
	// faster than PoolSize covers: the pool follows the recent arrival rate
	// times the start latency, between PoolSize and PoolMax. 0 keeps the
	// pool at PoolSize.
	PoolMax int `mapstructure:"pool_max"`
	// Instance is the value of the instance label. Reap and Close touch only
	// containers of their own instance, so several services (or test binaries)
	// can share one daemon. Empty means "default" to New.
	Instance string `mapstructure:"instance"`
	// BuildStatusDir is where images/build.sh says that it is
	// building an image (buildstatus.go): a run whose image is missing and
	// being built is refused with CodeUnavailable and a Retry-After of the
	// time left, and health names the build. Empty: a missing image is
	// missing.
	BuildStatusDir string `mapstructure:"build_status_dir"`
	// Observe, when set, is told of every Engine API failure (by
	// operation) and of how long each container took to be created and
	// started (op "start", err nil). It must not block.
	Observe func(op string, d time.Duration, err error) `mapstructure:"-"`
}

// defaultInstance is the instance label of a Config that names none.
const defaultInstance = "default"

// nofileLimit caps open file descriptors per process: plenty for a short
// program, few enough that no run can hoard the daemon's or kernel's tables.
const nofileLimit = 256

// Validate checks every field against its allowed range and returns one
// message per problem, each naming its config key (runtime.*), the field
// and what is allowed. A zero limit means "unlimited" to Docker, so every
// limit has a lower bound.
func (c Config) Validate() error { return c.ValidateNamed(nil) }

// ValidateNamed is Validate with each key named by name (nil: runtime.*):
// for the runtime an environment builds from its own keys and runtime.*'s,
// each problem under the key that set the value.
func (c Config) ValidateNamed(name func(key string) string) error {
	p := configcheck.Problems{Prefix: "runtime.", Name: name}
	inRange := configcheck.InRange[int64]
	p.CheckField(c.Image != "", "image", "Image", "is empty; name the image built by `make image` (sandbox-python:3.11)")
	p.CheckField(oneOf(c.OCIRuntime, "", "runc", "runsc", "crun"), "oci_runtime", "OCIRuntime", "%q is not one of runc, runsc, crun", c.OCIRuntime)
	p.CheckField(c.Timeout >= 100*time.Millisecond && c.Timeout <= 5*time.Minute, "timeout", "Timeout", "%v is outside 100ms..5m", c.Timeout)
	p.CheckField(inRange(int64(c.MemoryBytes), 16*configcheck.MiB, 64*configcheck.GiB), "memory", "MemoryBytes", "%d bytes is outside 16MiB..64GiB", c.MemoryBytes)
	p.CheckField(inRange(int64(c.NanoCPUs), 5e7, 64e9), "cpus", "NanoCPUs", "%v is outside 0.05..64", float64(c.NanoCPUs)/1e9)
	p.CheckField(inRange(c.PidsLimit, 8, 32768), "pids", "PidsLimit", "%d is outside 8..32768", c.PidsLimit)
	p.CheckField(inRange(int64(c.TmpfsBytes), configcheck.MiB, 4*configcheck.GiB), "tmpfs", "TmpfsBytes", "%d bytes is outside 1MiB..4GiB", c.TmpfsBytes)
	p.CheckField(inRange(int64(c.MaxOutputBytes), configcheck.KiB, 16*configcheck.MiB), "max_output_bytes", "MaxOutputBytes", "%d is outside 1 KiB..16 MiB", c.MaxOutputBytes)
	p.CheckField(inRange(int64(c.MaxFiles), 0, 1024), "max_files", "MaxFiles", "%d is outside 0..1024", c.MaxFiles)
	p.CheckField(inRange(int64(c.MaxFilesBytes), 0, 64*configcheck.MiB), "max_files_bytes", "MaxFilesBytes", "%d is outside 0..64 MiB", c.MaxFilesBytes)
	p.CheckField(c.MaxFilesBytes <= c.TmpfsBytes, "max_files_bytes", "MaxFilesBytes",
		"%d is over %s (%d): /tmp must hold the files in", c.MaxFilesBytes, p.Key("tmpfs"), c.TmpfsBytes)
	p.CheckField(inRange(int64(c.PoolSize), 0, 256), "pool_size", "PoolSize", "%d is outside 0..256", c.PoolSize)
	p.CheckField(inRange(int64(c.PoolMax), 0, 256), "pool_max", "PoolMax", "%d is outside 0..256", c.PoolMax)
	p.CheckField(c.PoolMax == 0 || c.PoolMax >= c.PoolSize, "pool_max", "PoolMax",
		"%d is below %s (%d): set it to pool_size or more, or 0 for a pool of a fixed size", c.PoolMax, p.Key("pool_size"), c.PoolSize)
	p.CheckField(validInstance(c.Instance), "instance", "Instance", "%q must be 1..63 letters, digits, '-', '_' or '.'", c.Instance)
	return p.Err()
}

// oneOf reports whether s is one of allowed.
func oneOf(s string, allowed ...string) bool {
	return slices.Contains(allowed, s)
}

// validInstance: 1 to 63 letters, digits, '-', '_' or '.', as a label value
// and a container name part.
func validInstance(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for _, r := range s {
		ok := r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !ok {
			return false
		}
	}
	return true
}
