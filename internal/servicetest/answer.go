// Package servicetest is the one way tests (and the bench and soak programs)
// start the sandboxd binary: it builds the binary once per process, starts it
// on a free loopback port and reads where it listens, stops it the way an
// operator would and then checks that nothing of its instance is left on the
// Docker daemon. It also holds the answer of POST /v1/code. The gates of the
// tests are in internal/testenv.
package servicetest

import (
	"encoding/base64"

	"sandboxd/httpapi/wire"
)

// Answer is the JSON of POST /v1/code: a delivered run (the fields of
// wire.CodeResponse, which the server encodes: the environment, the files
// out and files_truncated included), or an error in Error. CPUMS and
// MaxRSSKB are null when the program did not end by itself.
type Answer struct {
	wire.CodeResponse
	Error string `json:"error"`
}

// File returns the file out named name and its content, decoded; the
// content is nil when the file is listed without it (over the caps). It is
// false when the answer has no such file or its content is not base64.
func (a Answer) File(name string) (wire.FileOut, []byte, bool) {
	for _, f := range a.Files {
		if f.Name != name {
			continue
		}
		if f.Content == nil {
			return f, nil, true
		}
		content, err := base64.StdEncoding.DecodeString(*f.Content)
		return f, content, err == nil
	}
	return wire.FileOut{}, nil, false
}
