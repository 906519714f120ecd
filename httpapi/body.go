package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"sandboxd"
)

// Every unpaid request may send a body of MaxBodyBytes (files make it
// megabytes), and reading and decoding it costs the service a few times
// that in memory before the payment is even looked at. The body budget
// bounds those bytes across concurrent requests. A request takes room for
// the bytes that have arrived, a chunk at a time as they come (never for
// what Content-Length promises), and keeps it until its run is admitted
// (execute) or it is answered: the decoded job that waits for the payment
// check (check_wait) or a sandbox (queue_wait) holds its files, so those
// bytes stay counted while it waits. A request that cannot get room for
// its next chunk within bodyWait is answered 429 with Retry-After. The
// budget serves no queue (byteBudget): a small body never waits behind a
// large one. A body slower than MinBodyRate is cut off with a 408
// (bodyClock), and one client may be reading at most MaxBodiesPerClient
// bodies at once (429): idle sockets hold no budget and trickling ones
// lose it.
const (
	// defaultBodyBudgets is the budget, in full bodies, when
	// Server.BodyBudget is 0.
	defaultBodyBudgets = 4
	// bodyWait is how long a request waits for room in the budget.
	bodyWait = 2 * time.Second
	// bodyRetry is the Retry-After of a request refused for room.
	bodyRetry = time.Second
	// bodyFirstChunk is the room taken before the first byte is read: all
	// an idle connection holds.
	bodyFirstChunk = 1 << 10
	// bodyMaxChunk caps each later chunk. A chunk is at most the bytes
	// already read, so the room a body holds and has not filled is at
	// most what it has sent plus bodyFirstChunk.
	bodyMaxChunk = 64 << 10
)

// bodyBudgetOnce is the server's body budget, made on first use.
type bodyBudgetOnce struct {
	once   sync.Once
	budget *byteBudget
}

// bodyBudget returns the shared budget.
func (s *Server) bodyBudget() *byteBudget {
	s.bodies.once.Do(func() {
		size := s.BodyBudget
		if size <= 0 {
			size = defaultBodyBudgets * (s.MaxBodyBytes + 1)
		}
		s.bodies.budget = newByteBudget(size)
	})
	return s.bodies.budget
}

// bodyHold is a request's room in the body budget. Its methods are safe to
// call more than once and from any goroutine.
type bodyHold struct {
	budget *byteBudget
	mu     sync.Mutex
	n      int64
}

// grow takes n more bytes, without waiting when they fit now, else within
// bodyWait (CodeBusy after it); a caller gone is ctx's error. It returns
// how long it waited.
func (h *bodyHold) grow(ctx context.Context, n int64) (time.Duration, error) {
	if !h.budget.tryAcquire(n) {
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, bodyWait)
		err := h.budget.acquire(wctx, n)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, &sandboxd.Error{Code: sandboxd.CodeBusy, Op: "httpapi.read", RetryAfter: bodyRetry,
				Message: "too many large requests are being read at once; retry after the time in Retry-After"}
		}
		h.add(n)
		return time.Since(start), nil
	}
	h.add(n)
	return 0, nil
}

// add counts n more bytes as held.
func (h *bodyHold) add(n int64) {
	h.mu.Lock()
	h.n += n
	h.mu.Unlock()
}

// keep gives back all but n of the bytes held.
func (h *bodyHold) keep(n int64) {
	h.mu.Lock()
	back := h.n - n
	if back > 0 {
		h.n = n
	}
	h.mu.Unlock()
	h.budget.release(back)
}

// release gives back every byte held.
func (h *bodyHold) release() {
	if h != nil {
		h.keep(0)
	}
}

// bodyHoldKey is the context key of a request's room in the body budget.
type bodyHoldKey struct{}

// withBodyHold returns ctx carrying hold, for releaseBody.
func withBodyHold(ctx context.Context, hold *bodyHold) context.Context {
	return context.WithValue(ctx, bodyHoldKey{}, hold)
}

// releaseBody gives back the room ctx's request holds in the body budget,
// if any: its run is admitted, and what it keeps from then on is bounded
// by the admission of runs.
func releaseBody(ctx context.Context) {
	if hold, ok := ctx.Value(bodyHoldKey{}).(*bodyHold); ok {
		hold.release()
	}
}

// readBody reads at most limit bytes of r's body, taking room in the body
// budget for them as they arrive. It returns the body and its room, which
// the caller releases (or hands to execute with withBodyHold). A body
// declared over limit is CodeTooLarge unread; a longer one CodeTooLarge
// once read past limit; a client already reading MaxBodiesPerClient bodies
// or no room within bodyWait CodeBusy; a body too slow CodeTooSlow; a
// caller gone ctx's error.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *bodyHold, error) {
	if r.ContentLength > limit {
		return nil, nil, bodyTooLarge(limit)
	}
	done, err := s.countBody(r)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	hold := &bodyHold{budget: s.bodyBudget()}
	clock := s.newBodyClock(w)
	body, err := readChunks(r, limit, hold, clock)
	if sandboxd.ErrorCode(err) != sandboxd.CodeTooSlow {
		// A body cut off keeps its deadline, past: else the server would
		// wait for the rest of it, to drain it before answering.
		clock.disarm()
	}
	if err != nil {
		hold.release()
		return nil, nil, err
	}
	return body, hold, nil
}

// readChunks reads r's body in chunks, taking each chunk's room before it
// is read and giving back what the last one left unfilled.
func readChunks(r *http.Request, limit int64, hold *bodyHold, clock *bodyClock) ([]byte, error) {
	want := limit + 1
	if r.ContentLength >= 0 {
		want = r.ContentLength
	}
	var chunks [][]byte
	var got int64
	for eof := false; !eof && got < want; {
		size := min(max(got, bodyFirstChunk), bodyMaxChunk, want-got)
		waited, err := hold.grow(r.Context(), size)
		if err != nil {
			return nil, err
		}
		clock.waited += waited
		chunk := make([]byte, 0, size)
		for int64(len(chunk)) < size && !eof {
			clock.arm(got)
			n, err := r.Body.Read(chunk[len(chunk):size])
			chunk, got = chunk[:len(chunk)+n], got+int64(n)
			if err == io.EOF {
				eof = true
			} else if err != nil {
				return nil, readError(err, clock)
			}
		}
		chunks = append(chunks, chunk)
	}
	if got > limit {
		return nil, bodyTooLarge(limit)
	}
	hold.keep(got)
	return joinChunks(chunks, got), nil
}

// joinChunks is chunks as one slice of n bytes.
func joinChunks(chunks [][]byte, n int64) []byte {
	if len(chunks) == 1 {
		return chunks[0]
	}
	body := make([]byte, 0, n)
	for _, c := range chunks {
		body = append(body, c...)
	}
	return body
}

// readError is the error of a failed read of a body.
func readError(err error, clock *bodyClock) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return clock.tooSlow(err)
	}
	return sandboxd.Wrap(sandboxd.CodeInvalid, "httpapi.read", err, "could not read the request body")
}

// bodyTooLarge is the error of a body over limit.
func bodyTooLarge(limit int64) error {
	return sandboxd.Errorf(sandboxd.CodeTooLarge, "httpapi.read", "request body is over the limit of %d bytes", limit)
}
