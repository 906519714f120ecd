// Package faults holds fault-injection tests of the whole service: the
// Docker daemon stopped and restarted under it while runs are in flight.
// They stop the host's dockerd, so they run only when SANDBOXD_FAULTS=1
// (make test sets it, and runs test packages one at a time).
package faults
