package httpapi

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"sandboxd"
)

// Every unpaid request may send a body of MaxBodyBytes (files make it
// megabytes), and reading and decoding it costs the service a few times
// that in memory before the payment is even looked at. The body budget
// bounds those bytes across concurrent requests: a request reserves its
// body's size before reading it and gives it back once the body is decoded
// into a Job (POST /v1/code, the MCP tool) or, for any other MCP message,
// answered. What a run then keeps is bounded by the admission of runs. A
// request that cannot reserve within bodyWait is answered 429 with
// Retry-After, having read nothing.
const (
	// defaultBodyBudgets is the budget, in full bodies, when
	// Server.BodyBudget is 0.
	defaultBodyBudgets = 4
	// bodyWait is how long a request waits for room in the budget.
	bodyWait = 2 * time.Second
	// bodyRetry is the Retry-After of a request refused for room.
	bodyRetry = time.Second
)

// bodyBudgetOnce is the server's body budget, made on first use.
type bodyBudgetOnce struct {
	once sync.Once
	sem  *semaphore.Weighted
	size int64
}

// bodyBudget returns the shared budget and its size in bytes.
func (s *Server) bodyBudget() (*semaphore.Weighted, int64) {
	s.bodies.once.Do(func() {
		size := s.BodyBudget
		if size <= 0 {
			size = defaultBodyBudgets * (s.MaxBodyBytes + 1)
		}
		s.bodies.sem, s.bodies.size = semaphore.NewWeighted(size), size
	})
	return s.bodies.sem, s.bodies.size
}

// holdBody reserves room for r's body in the body budget before it is
// read: its Content-Length, or limit+1 bytes when the length is not told
// (chunked). A body declared over limit is CodeTooLarge at once; no room
// within bodyWait is CodeBusy; a caller gone is ctx's error. The release
// it returns may be called more than once.
func (s *Server) holdBody(r *http.Request, limit int64) (func(), error) {
	if r.ContentLength > limit {
		return nil, bodyTooLarge(limit)
	}
	n := limit + 1
	if r.ContentLength >= 0 {
		n = max(r.ContentLength, 1)
	}
	sem, size := s.bodyBudget()
	n = min(n, size)
	if !sem.TryAcquire(n) {
		ctx, cancel := context.WithTimeout(r.Context(), bodyWait)
		err := sem.Acquire(ctx, n)
		cancel()
		if err != nil {
			if r.Context().Err() != nil {
				return nil, r.Context().Err()
			}
			return nil, &sandboxd.Error{Code: sandboxd.CodeBusy, Op: "httpapi.read", RetryAfter: bodyRetry,
				Message: "too many large requests are being read at once; retry after the time in Retry-After"}
		}
	}
	var once sync.Once
	return func() { once.Do(func() { sem.Release(n) }) }, nil
}

// bodyHoldKey is the context key of a request's release of its room in
// the body budget.
type bodyHoldKey struct{}

// withBodyHold returns ctx carrying release, for releaseBody.
func withBodyHold(ctx context.Context, release func()) context.Context {
	return context.WithValue(ctx, bodyHoldKey{}, release)
}

// releaseBody gives back the room ctx's request holds in the body budget,
// if any: its body is decoded, and what the call keeps (a Job) is bounded
// by the admission of runs, not by bodies.
func releaseBody(ctx context.Context) {
	if release, ok := ctx.Value(bodyHoldKey{}).(func()); ok {
		release()
	}
}

// readBody reads at most limit bytes of the body, into a buffer of the
// body's declared length when it has one; a longer body is a CodeTooLarge
// error.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, bodyTooLarge(limit)
	}
	var body []byte
	var err error
	if r.ContentLength >= 0 {
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, limit+1))
	}
	if err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeInvalid, "httpapi.read", err, "could not read the request body")
	}
	if int64(len(body)) > limit {
		return nil, bodyTooLarge(limit)
	}
	return body, nil
}

// bodyTooLarge is the error of a body over limit.
func bodyTooLarge(limit int64) error {
	return sandboxd.Errorf(sandboxd.CodeTooLarge, "httpapi.read", "request body is over the limit of %d bytes", limit)
}
