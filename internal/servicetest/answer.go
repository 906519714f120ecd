// Package servicetest is the one way tests (and the bench and soak programs)
// start the sandboxd binary: it builds the binary once per process, starts it
// on a free loopback port and reads where it listens, stops it the way an
// operator would and then checks that nothing of its instance is left on the
// Docker daemon. It also holds the answer of POST /v1/code. The gates of the
// tests are in internal/testenv.
package servicetest

// Answer is the JSON of POST /v1/code: a delivered run, or an error in
// Error. CPUMS and MaxRSSKB are null when the program did not end by itself.
type Answer struct {
	Lang       string `json:"lang"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ExitCode   int    `json:"exit_code"`
	Status     string `json:"status"`
	TimedOut   bool   `json:"timed_out"`
	OOMKilled  bool   `json:"oom_killed"`
	Truncated  bool   `json:"truncated"`
	DurationMS int64  `json:"duration_ms"`
	CPUMS      *int64 `json:"cpu_ms"`
	MaxRSSKB   *int64 `json:"max_rss_kb"`
	Error      string `json:"error"`
}
