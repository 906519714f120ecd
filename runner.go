package sandboxd

import "context"

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
// Health reports nil when runs can start, else an error saying why not.
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
}

// Admitter bounds how many runs happen at once.
//
// Admit waits up to its queue time for a slot and returns a function that
// frees it. It returns an *Error with CodeBusy (and RetryAfter set) when no
// slot freed in time, or the context's error when ctx ended first.
type Admitter interface {
	Admit(ctx context.Context) (release func(), err error)
}
