package sandboxd

import "time"

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

// DefaultEnvironment is the environment of a request that names none: the
// seed's standard-library Python, its limits and its price.
const DefaultEnvironment = "python"

// DataEnvironment is the conventional name of the environment for data
// work: numpy, pandas, matplotlib and scipy, files in and out, plots saved.
const DataEnvironment = "data"
