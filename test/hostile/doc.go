// Package hostile holds a suite of hostile programs: fork and memory bombs,
// output floods, escaped children, stopped processes, privileged system
// calls, probes of /proc and /sys. Each runs through the real Docker runner
// (package runtime) under every OCI runtime the service supports (runc, and
// gVisor's runsc), and each must end in its documented answer while leaving
// the service and the host as they were.
//
// The package has only tests. They run only with SANDBOXD_INTEGRATION=1 or
// CI=true (so `go test ./...` creates no container), and then fail when
// Docker, the image or runsc is missing.
package hostile
