package sandboxd

import "time"

// Job is one program to run.
type Job struct {
	// ID identifies the run in logs and container labels.
	ID string
	// Language is the canonical language name (see NormalizeLanguage).
	Language string
	// Code is the program's source text.
	Code string
	// Stdin is handed to the program as its standard input; empty means
	// the program reads EOF at once.
	Stdin string
	// Environment names the environment the program runs in (see
	// Environment); "" means DefaultEnvironment.
	Environment string
	// Files are written into the program's working directory before it
	// starts, validated already (names, count and size caps).
	Files []File
}

// Status summarizes how a delivered run ended.
type Status string

// The statuses of a delivered run. Each is an answer the caller paid for:
// the program's own failure is not the service's.
const (
	// StatusOK means the program exited 0.
	StatusOK Status = "ok"
	// StatusError means the program exited non-zero by itself.
	StatusError Status = "error"
	// StatusTimeout means the program was killed at the wall-clock limit.
	StatusTimeout Status = "timeout"
	// StatusOOM means the kernel killed the program for exceeding its memory.
	StatusOOM Status = "oom"
	// StatusOutputLimit means the program was killed for writing more than
	// the output cap on stdout or stderr.
	StatusOutputLimit Status = "output_limit"
)

// Result is what a delivered run produced. A program that fails, loops or
// runs out of memory still produces a Result; only the service's own failures
// are errors.
type Result struct {
	// Stdout and Stderr are the program's output, decoded as UTF-8 with
	// invalid bytes replaced, each capped at the configured size.
	Stdout string
	Stderr string
	// ExitCode is the process's exit status (137 when killed).
	ExitCode int
	// Status summarizes the outcome.
	Status Status
	// TimedOut reports that the wall-clock limit killed the run.
	TimedOut bool
	// OOMKilled reports that the kernel's OOM killer ended the run.
	OOMKilled bool
	// Truncated reports that output was cut at the cap.
	Truncated bool
	// Files are the regular files the program created or changed under its
	// working directory, in name order; those past the caps are listed
	// without Content.
	Files []File
	// FilesTruncated reports that a file out was listed without its
	// content, or left out, for the caps (count or bytes).
	FilesTruncated bool
	// Duration is the time from handing over the code to the program's end.
	Duration time.Duration
	// Usage is what the program used, measured inside its sandbox; nil when
	// the program did not end by itself (killed at the deadline or the
	// output cap, by the OOM killer or a signal, or by os._exit), since
	// then nothing inside was left to measure it.
	Usage *Usage
	// Gone, when not nil, is closed once the run's sandbox holds nothing:
	// its container stopped (nothing of it runs, its memory is freed) or
	// was removed. The answer comes first, and the container's kill and
	// removal follow. Whoever bounds how many sandboxes run at once (the
	// admission slot) holds its bound until then, so a killed run's memory
	// is still counted; the removal after the stop needs no slot. Nil when
	// nothing is left to wait for.
	Gone <-chan struct{} `json:"-"`
}

// Usage is the resources a program used, as the kernel it ran on counted
// them (under runsc, gVisor's own kernel).
type Usage struct {
	// CPU is user plus system CPU time of the program, its children
	// included.
	CPU time.Duration
	// MaxRSSKB is the program's peak resident memory in KiB (that of the
	// largest of its processes).
	MaxRSSKB int64
}

// Classify fills in Status from the flags and the exit code, in order of
// precedence: output limit, timeout, OOM, then the exit code.
func (r *Result) Classify() {
	switch {
	case r.Truncated:
		r.Status = StatusOutputLimit
	case r.TimedOut:
		r.Status = StatusTimeout
	case r.OOMKilled:
		r.Status = StatusOOM
	case r.ExitCode != 0:
		r.Status = StatusError
	default:
		r.Status = StatusOK
	}
}
