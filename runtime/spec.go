package runtime

import (
	"crypto/rand"
	"encoding/hex"
	"sandboxd/internal/configcheck"
	"strconv"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"sandboxd"
)

// The labels that mark a container as ours. Reap and Close find containers
// by them, never by name.
const (
	// LabelManaged is set to "true" on every container this package creates.
	LabelManaged = "io.sandboxd.managed"
	// LabelInstance holds Config.Instance.
	LabelInstance = "io.sandboxd.instance"
	// LabelJob holds the job's ID, or "pool" for a warm container started
	// before its job was known ("session" for one started for a session).
	LabelJob = "io.sandboxd.job"
	// LabelKind is "session" on a container started for a session; a
	// run's carries none. Reap goes by instance, so it removes both.
	LabelKind = "io.sandboxd.kind"
)

// sandboxUser is the image's unprivileged user (see images/build.sh).
// It is set here too, so a rebuilt image can never make a run root.
const sandboxUser = "10001:10001"

// spec is everything ContainerCreate needs for one run.
type spec struct {
	name   string
	config *container.Config
	host   *container.HostConfig
}

// gvisorRuntime is gVisor's OCI runtime.
const gvisorRuntime = "runsc"

// gvisorPids is added to the pids limit under gVisor, whose own sandbox
// is in the container's cgroup and counts against the limit: a bare node
// process under runsc held 43 pids where it holds 4 under runc (measured,
// 2026-12-06), so under a limit of 64 the node image's supervisor, its
// warm stub and a Bash stub started beside it failed a hello world one
// run in four (exit 2, or the sandbox stopped before the program
// started). The program keeps about the limit it is configured with.
const gvisorPids = 64

// newSpec builds the hardened container for one job. Every field here is a
// limit or an isolation: nothing about it depends on the program.
func newSpec(cfg Config, job sandboxd.Job) spec {
	pids := cfg.PidsLimit
	if cfg.OCIRuntime == gvisorRuntime {
		pids += gvisorPids
	}
	memory, tmpfsBytes := int64(cfg.MemoryBytes), int64(cfg.TmpfsBytes)
	tmpfs := strconv.FormatInt(tmpfsBytes, 10)
	return spec{
		name: "sandboxd-" + randomHex(6),
		config: &container.Config{
			Image:  cfg.Image,
			User:   sandboxUser,
			Labels: labels(cfg.Instance, job.ID),
			// The runner sets the data limit on itself before the program
			// runs: as an OCI rlimit it would bind runc's own init too, a Go
			// program with 64 MiB heap arenas, which then fails to start
			// containers now and then (ENOMEM adding its seccomp rules).
			Env: []string{dataLimitEnv + "=" + strconv.FormatInt(dataLimit(memory), 10)},
			// The code goes in on stdin, attached before start; StdinOnce
			// closes the program's stdin when we close our end.
			OpenStdin:    true,
			StdinOnce:    true,
			AttachStdin:  true,
			AttachStdout: true,
			AttachStderr: true,
			Tty:          false,
			// With NetworkMode "none" alone, dockerd still re-executes itself
			// as libnetwork's prestart hook on every start (about 40 % of
			// the host's CPU at saturation). NetworkDisabled drops the hook;
			// the container keeps a network namespace of its own holding
			// only loopback.
			NetworkDisabled: true,
		},
		host: &container.HostConfig{
			NetworkMode:    "none",
			ReadonlyRootfs: true,
			Tmpfs:          map[string]string{"/tmp": "rw,noexec,nosuid,nodev,mode=1777,size=" + tmpfs},
			CapDrop:        []string{"ALL"},
			SecurityOpt:    []string{"no-new-privileges"},
			// A private /dev/shm (multiprocessing needs it), sized like /tmp
			// instead of Docker's 64 MiB; Docker mounts it noexec,nosuid,nodev.
			IpcMode:    container.IPCModePrivate,
			ShmSize:    tmpfsBytes,
			LogConfig:  container.LogConfig{Type: "none"},
			AutoRemove: false,
			Runtime:    cfg.OCIRuntime,
			Resources: container.Resources{
				Memory:     memory,
				MemorySwap: memory,
				NanoCPUs:   int64(cfg.NanoCPUs),
				PidsLimit:  &pids,
				// No nproc: it counts every process of uid 10001 on the host,
				// so one run's fork bomb would starve the others. PidsLimit
				// is per container.
				Ulimits: []*container.Ulimit{
					{Name: "nofile", Soft: nofileLimit, Hard: nofileLimit},
					{Name: "fsize", Soft: tmpfsBytes, Hard: tmpfsBytes},
					// No core dumps, and no raising the limit back: a hard
					// limit only goes down.
					{Name: "core", Soft: 0, Hard: 0},
				},
			},
		},
	}
}

// useSocket has the container's runner use l instead of its attach
// connection: the socket's directory mounted read-only, its path in the
// environment, and nothing to attach.
func (sp spec) useSocket(l *socketLink) {
	sp.host.Mounts = append(sp.host.Mounts, l.mount())
	sp.config.Env = append(sp.config.Env, ioEnv+"="+ioMountDir+"/"+ioSocket)
	c := sp.config
	c.OpenStdin, c.StdinOnce, c.AttachStdin, c.AttachStdout, c.AttachStderr = false, false, false, false, false
}

// dataLimitEnv is the environment variable that hands the runner
// (images/python/run.py) its data limit; the runner removes it before the
// program runs.
const dataLimitEnv = "SANDBOX_DATA_LIMIT"

// dataHeadroom is the most memory the data limit leaves below the
// container's memory limit, for what the limit does not count but the
// cgroup does: the interpreter's code and libraries, the page cache its
// imports read, page tables, the kernel's own memory. The data image's
// preloaded numpy, pandas and matplotlib keep 28 MiB of file pages mapped,
// and the container whose preload first read them is charged up to 95 MiB of
// their page cache. With 32 MiB of headroom, then 96, a numpy bomb in a
// 512 MiB container brought the cgroup to its limit (measured: 511 MiB,
// 411 MiB of it anonymous, at the MemoryError), and on a loaded host the
// kernel reclaimed and refaulted those pages until the 10 s deadline (CI
// runs with a CPU hog, 2026-12-02) instead of the MemoryError.
const dataHeadroom = 128 * configcheck.MiB

// dataLimit is the RLIMIT_DATA the runner sets on itself, soft and hard,
// before its program runs (so every process of the program inherits it),
// in a container with the given memory limit: the limit less a quarter of
// it, at most dataHeadroom (a 128 MiB container gets 96 MiB, 512 MiB gets 384).
// RLIMIT_DATA counts a process's heap and private writable mappings, so an
// allocation past it fails at once (Python raises MemoryError), instead of
// pushing the cgroup to its limit where, on a busy host, the kernel
// reclaims and refaults the interpreter's own pages for seconds before its
// OOM killer acts (BENCHMARKS.md, "Memory bombs"). It bounds one process:
// a program that forks, or fills /tmp and /dev/shm, still meets the
// cgroup's limit and its OOM killer. gVisor (runsc) does not enforce it.
func dataLimit(memory int64) int64 {
	return memory - min(memory/4, dataHeadroom)
}

// labels returns the labels of a container of the instance running the job.
func labels(instance, jobID string) map[string]string {
	return map[string]string{
		LabelManaged:  "true",
		LabelInstance: instance,
		LabelJob:      jobID,
	}
}

// instanceFilter selects the containers of one instance.
func instanceFilter(instance string) filters.Args {
	return filters.NewArgs(
		filters.Arg("label", LabelManaged+"=true"),
		filters.Arg("label", LabelInstance+"="+instance),
	)
}

// randomHex returns n random bytes in hex, for unique container names.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// shortID is the 12-character container ID Docker's CLI shows.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
