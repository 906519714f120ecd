package sandboxd

import "time"

// DefaultEnvironment is the environment of a request that names none: the
// seed's standard-library Python, its limits and its price.
const DefaultEnvironment = "python"

// DataEnvironment is the conventional name of the environment for data
// work: numpy, pandas, matplotlib and scipy, files in and out, plots saved.
const DataEnvironment = "data"

// Environment describes one configured environment as callers see it: the
// API validates a request's "environment" against these, and discovery
// (OpenAPI, the bazaar extension, the MCP tool's schemas) lists them.
type Environment struct {
	// Name is what a request's "environment" field says, e.g. "python".
	Name string
	// Description says in a line what the environment holds.
	Description string
	// Timeout is the wall-clock limit of a run.
	Timeout time.Duration
	// MemoryBytes is the memory limit of a run.
	MemoryBytes int64
	// Price is the price of one call, in asset units ("0.005"); "" when
	// calls are free.
	Price string
	// Languages are the canonical names of the languages the environment
	// runs, its default first; never empty in a Catalog (the configuration
	// refuses an environment without one).
	Languages []string
}

// File is one file handed to a program (Job.Files) or produced by it
// (Result.Files).
type File struct {
	// Name is the file's path relative to the program's working directory,
	// with "/" between its parts: never absolute, never with "." or ".."
	// parts, never with a NUL.
	Name string
	// Content is the file's bytes. On a file out it is nil when the file was
	// over the caps (listed by name and size only, with FilesTruncated set).
	Content []byte
	// Size is the file's size in bytes (len(Content) when it is there).
	Size int64
	// MediaType is the file's media type, judged from its content and
	// name (files out only), e.g. "image/png".
	MediaType string
}
