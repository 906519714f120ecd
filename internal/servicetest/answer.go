// Package servicetest is the one way tests (and the bench and soak programs)
// start the sandboxd binary: it builds the binary once per process, starts it
// on a free loopback port and reads where it listens, stops it the way an
// operator would and then checks that nothing of its instance is left on the
// Docker daemon. It also holds the answer of POST /v1/code. The gates of the
// tests are in internal/testenv.
package servicetest

import "sandboxd/httpapi"

// Answer is the JSON of POST /v1/code: a delivered run (the fields of
// httpapi.CodeResponse, which the server encodes), or an error in Error.
// CPUMS and MaxRSSKB are null when the program did not end by itself.
type Answer struct {
	httpapi.CodeResponse
	Error string `json:"error"`
}
