package httpapi

import (
	"net/http"
	"time"

	"sandboxd"
)

// rendered is a paid answer rendered before its settlement: its status and
// the very bytes that are then written, which Charge.Settle keeps for a
// replay (sandboxd.Delivered). Over MCP the bytes are the tool result's
// structuredContent.
type rendered struct {
	Status int
	Body   []byte
	// Took is what the encoding took: the write phase counts it with the
	// write, as when the answer was encoded as it was written.
	Took time.Duration
}

// render encodes v, an answer of status, as writeJSON writes it.
func render(status int, v any) (rendered, error) {
	began := time.Now()
	body, err := encodeBody(v, false)
	if err != nil {
		return rendered{}, sandboxd.Wrap(sandboxd.CodeInternal, "httpapi.render", err, "")
	}
	return rendered{Status: status, Body: body, Took: time.Since(began)}, nil
}

// write answers a, byte for byte, recording the write phase in phases (nil:
// none).
func (a rendered) write(w http.ResponseWriter, phases *sandboxd.Phases) {
	began := time.Now()
	writeBody(w, a.Status, a.Body)
	phases.Add(sandboxd.PhaseWrite, a.Took+time.Since(began))
}

// delivered is what Settle is handed for res and its answer a.
func (a rendered) delivered(res sandboxd.Result) sandboxd.Delivered {
	return sandboxd.Delivered{Result: res, Status: a.Status, Body: a.Body}
}
