package sandboxd

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Runner runs programs in isolation.
//
// Run returns a Result for every run that was delivered, whatever the program
// did (non-zero exit, timeout, OOM, output flood). It returns an *Error when
// the service itself failed:
//   - CodeUnavailable when the container engine cannot be reached or the
//     image is missing (the caller may retry later);
//   - CodeInternal for anything else (logged, never shown to callers);
//   - the context's error when ctx ended before the run started.
//
// Health reports nil when runs can start, else an error saying why not: a
// *Building (the service is healthy) when the only environments that cannot
// are those whose images are being built.
// Info describes the engine and image for the version endpoint.
type Runner interface {
	Run(ctx context.Context, job Job) (Result, error)
	Health(ctx context.Context) error
	Info(ctx context.Context) (RunnerInfo, error)
}

// RunnerInfo describes what runs the programs.
type RunnerInfo struct {
	// Engine is the container engine's name and version, e.g. "docker 20.10.24".
	Engine string `json:"engine"`
	// EngineAPI is the negotiated API version.
	EngineAPI string `json:"engine_api"`
	// Image is the image every run uses.
	Image string `json:"image"`
	// OCIRuntime is the OCI runtime containers run under (runc, runsc).
	OCIRuntime string `json:"oci_runtime"`
	// Building are the builds under way of other environments' images.
	Building []ImageBuild `json:"-"`
}

// Admitter bounds how many runs happen at once.
//
// Admit waits up to its queue time for a slot and returns a function that
// frees it. It returns an *Error with CodeBusy (and RetryAfter set) when no
// slot freed in time, or the context's error when ctx ended first.
type Admitter interface {
	Admit(ctx context.Context) (release func(), err error)
}

// ImageBuild is the cause (Error.Err) of the CodeUnavailable error that an
// environment's runs get while its image is missing and being built: the
// error's RetryAfter is the time left until ReadyAt. Health answers it
// inside a Building.
type ImageBuild struct {
	// Environment is the environment whose image it is.
	Environment string
	// Image is the image being built.
	Image string
	// Started is when the build began.
	Started time.Time
	// ReadyAt is when the build expects to be done (Started plus the last
	// build's duration); it may be in the past when the build is late.
	ReadyAt time.Time
}

// Error implements the error interface.
func (b *ImageBuild) Error() string { return "image " + b.Image + " is being built" }

// Building is the error Runner.Health returns, alone, when the only
// environments that cannot start runs are those whose images are being
// built: the service is healthy (the default environment runs), and the
// runs of those environments are refused with CodeUnavailable and
// RetryAfter until their images are ready.
type Building struct {
	// Refusals are the errors of those environments' runs, one per
	// environment, each with an *ImageBuild cause.
	Refusals []*Error
}

// Error implements the error interface.
func (b *Building) Error() string {
	msgs := make([]string, len(b.Refusals))
	for i, e := range b.Refusals {
		msgs[i] = e.Message
	}
	return "images being built: " + strings.Join(msgs, "; ")
}

// Images are the builds under way.
func (b *Building) Images() []ImageBuild {
	var out []ImageBuild
	for _, e := range b.Refusals {
		var ib *ImageBuild
		if errors.As(e, &ib) {
			out = append(out, *ib)
		}
	}
	return out
}

// Refusal is the error of a run in the environment while its image is
// being built, or nil when it is not being built.
func (b *Building) Refusal(environment string) *Error {
	for _, e := range b.Refusals {
		var ib *ImageBuild
		if errors.As(e, &ib) && ib.Environment == environment {
			return e
		}
	}
	return nil
}
