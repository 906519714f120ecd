// Package remote holds what the settlers share about talking to a party
// the service depends on (the RPC node, the facilitator): answers read
// with their size and depth bounded, and the error of a settlement that
// never left.
package remote

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"sandboxd/internal/jsonkeys"
)

// maxAnswerHeaderBytes bounds the headers of an answer of the RPC node or
// the facilitator (Go's default is 10 MB); theirs are a few hundred bytes.
const maxAnswerHeaderBytes = 64 << 10

// ReadAnswer reads the body of an answer of a service this one depends on
// (the RPC node, the facilitator): at most limit bytes, and JSON nested at
// most jsonkeys.MaxDepth. A longer or deeper answer is an error, not a
// truncated read, so it cannot pass for another answer. Reading is bounded
// in time by the request's context.
func ReadAnswer(body io.Reader, limit int64) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("the answer is over the limit of %d bytes", limit)
	}
	if e := jsonkeys.CheckDepth(raw, jsonkeys.MaxDepth); e != nil {
		return nil, fmt.Errorf("the answer is refused: %s", e.Describe(""))
	}
	return raw, nil
}

// Transport is a transport for calls to the RPC node and the
// facilitator, with their answers' headers bounded.
func Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxResponseHeaderBytes = maxAnswerHeaderBytes
	return t
}

// BoundedTransport reads every answer's body whole through ReadAnswer
// before its caller sees it; go-ethereum's RPC client would otherwise
// read a node's answer, or its error page, without a size limit.
type BoundedTransport struct {
	// Base makes the calls.
	Base http.RoundTripper
	// Limit bounds each answer's body, in bytes.
	Limit int64
}

// RoundTrip makes the call, then reads and bounds the answer's body.
func (t BoundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.Base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	raw, err := ReadAnswer(resp.Body, t.Limit)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", resp.Status, err)
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
	return resp, nil
}

// ErrNotSent marks a settlement failure that happened before anything able
// to collect the payment left the service: no transaction reached the
// chain, no /settle request reached the facilitator (the connection was
// refused, or the node refused the transaction). The charge then releases
// the payment: nobody was charged, and the same payment may be offered
// again. A failure that may have come after the settlement left (a timeout,
// a garbled answer) never carries it.
var ErrNotSent = errors.New("the settlement was not sent")

// DialFailed reports whether an HTTP call failed before a connection was
// made, so the request cannot have reached the server.
func DialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
