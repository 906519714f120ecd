// Package hostile holds a suite of hostile programs: fork and memory bombs,
// output floods, escaped children, stopped processes, privileged system
// calls, probes of /proc and /sys. Each runs through the real Docker runner
// (package runtime) in each environment (python, the seed's, data and
// node, each with its own image and limits) under every OCI runtime
// the service supports (runc, and gVisor's runsc), and each must end in its
// documented answer while leaving the service and the host as they were.
// In data, further cases attack what it adds: numpy's allocations, C
// extensions reading wild memory, BLAS threads, matplotlib's caches on a
// read-only root, pandas pointed at the system's files; and in both, the
// files out (too large, too many, links, special files, bad names) and
// the files in. In node the same ideas, and the stubs' own
// (Node's heap and workers, microtask loops, forged markers, the
// supervisor's token), run as JavaScript, TypeScript and Bash, one-shot
// and in sessions, in one pooled variant per OCI runtime.
//
// The package has only tests. They run only with SANDBOXD_INTEGRATION=1 or
// CI=true (so `go test ./...` creates no container), and then fail when
// Docker, an image or runsc is missing. The files cases skip while an image
// speaks a runner protocol without files (before 4), and fail so under
// CI=true.
package hostile
