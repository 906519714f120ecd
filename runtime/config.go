package runtime

import (
	"fmt"
	"time"
)

// Config holds the limits and identity every container of a Docker runner
// gets. The fields are plain values: cmd/sandboxd copies them from its
// configuration file, so this package never sees how they were read.
type Config struct {
	// Image is the Python image every run uses, e.g. "sandbox-python:3.11".
	Image string
	// OCIRuntime names the OCI runtime (runc, runsc); empty means the daemon's default.
	OCIRuntime string
	// Timeout is the wall-clock limit, counted from the hand-over of the code.
	Timeout time.Duration
	// MemoryBytes caps memory, and memory plus swap, so nothing is swapped.
	MemoryBytes int64
	// NanoCPUs caps CPU time in billionths of a CPU (1e9 is one CPU).
	NanoCPUs int64
	// PidsLimit caps the processes and threads alive at once.
	PidsLimit int64
	// TmpfsBytes sizes the only writable place, /tmp, and caps any file's size.
	TmpfsBytes int64
	// MaxOutputBytes caps each of stdout and stderr; past it the run is killed.
	MaxOutputBytes int
	// PoolSize is how many containers are kept started ahead of the runs,
	// each with its runner waiting for a program; 0 creates a container for
	// each run when it comes.
	PoolSize int
	// PoolMax is the most containers the pool grows to while runs arrive
	// faster than PoolSize covers: the pool follows the recent arrival rate
	// times the start latency, between PoolSize and PoolMax. Below
	// PoolSize (0 included) the pool stays at PoolSize.
	PoolMax int
	// Instance is the value of the instance label. Reap and Close touch only
	// containers of their own instance, so several services (or test binaries)
	// can share one daemon. Empty means "default".
	Instance string
	// Observe, when set, is told of every Engine API failure (by
	// operation) and of how long each container took to be created and
	// started (op "start", err nil). It must not block.
	Observe func(op string, d time.Duration, err error)
}

// defaultInstance is the instance label of a Config that names none.
const defaultInstance = "default"

// nofileLimit caps open file descriptors per process: plenty for a short
// program, few enough that no run can hoard the daemon's or kernel's tables.
const nofileLimit = 256

// validate reports the first field that would leave a container unlimited or
// unusable. A zero limit means "unlimited" to Docker, so every one is required.
func (c Config) validate() error {
	switch {
	case c.Image == "":
		return fmt.Errorf("runtime: Image is empty")
	case c.Timeout <= 0:
		return fmt.Errorf("runtime: Timeout must be positive, got %s", c.Timeout)
	case c.MemoryBytes < 6<<20:
		return fmt.Errorf("runtime: MemoryBytes must be at least 6 MiB (Docker's minimum), got %d", c.MemoryBytes)
	case c.NanoCPUs <= 0:
		return fmt.Errorf("runtime: NanoCPUs must be positive, got %d", c.NanoCPUs)
	case c.PidsLimit <= 0:
		return fmt.Errorf("runtime: PidsLimit must be positive, got %d", c.PidsLimit)
	case c.TmpfsBytes <= 0:
		return fmt.Errorf("runtime: TmpfsBytes must be positive, got %d", c.TmpfsBytes)
	case c.MaxOutputBytes <= 0:
		return fmt.Errorf("runtime: MaxOutputBytes must be positive, got %d", c.MaxOutputBytes)
	case c.PoolSize < 0:
		return fmt.Errorf("runtime: PoolSize must not be negative, got %d", c.PoolSize)
	case c.PoolMax < 0:
		return fmt.Errorf("runtime: PoolMax must not be negative, got %d", c.PoolMax)
	}
	return nil
}
