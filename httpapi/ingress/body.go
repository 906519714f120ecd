// Package ingress guards the way into the API, before a request is decoded:
// the client behind trusted proxies (client.go), the cap on one client's
// connections (conns.go), and the reading of a body within a byte budget
// shared by every request, a minimum rate and a cap on one client's bodies
// (body.go, body_rate.go). Its errors are sandboxd.Error values with codes,
// which httpapi maps to statuses; their ops stay httpapi's ("httpapi.read"),
// the reads being the API's, so its logs read as before.
package ingress

import (
	"errors"
	"io"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"

	"sandboxd"
)

// Every unpaid request may send a body of Limits.MaxBodyBytes (files make it
// megabytes), and reading and decoding it costs the service a few times
// that in memory before the payment is even looked at. The body budget
// bounds those bytes across concurrent requests. A request takes room for
// the bytes that have arrived, a chunk at a time as they come (never for
// what Content-Length promises), and keeps it until its run is admitted
// (execute) or it is answered: the decoded job that waits for the payment
// check (check_wait) or a sandbox (queue_wait) holds its files, so those
// bytes stay counted while it waits. A request that cannot get room for
// its next chunk within BodyWait is answered 429 with Retry-After. The
// budget serves no queue (byteBudget): a small body never waits behind a
// large one. A body slower than MinBodyRate is cut off with a 408
// (bodyClock), and one client may be reading at most MaxBodiesPerClient
// bodies at once (429): idle sockets hold no budget and trickling ones
// lose it.
const (
	// DefaultBodyBudgets is the budget, in full bodies, when
	// Limits.BodyBudget is 0.
	DefaultBodyBudgets = 4
	// BodyWait is how long a request waits for room in the budget.
	BodyWait = 2 * time.Second
	// bodyRetry is the Retry-After of a request refused for room.
	bodyRetry = time.Second
	// FirstChunk is the room taken before the first byte is read: all an
	// idle connection holds.
	FirstChunk = 1 << 10
	// bodyMaxChunk caps each later chunk. A chunk is at most the bytes
	// already read, so the room a body holds and has not filled is at
	// most what it has sent plus FirstChunk.
	bodyMaxChunk = 64 << 10
)

// Limits are the bounds bodies are read within. They are passed on each
// read, so a change shows on the next request, but for the budget's size,
// taken on the first.
type Limits struct {
	// MaxBodyBytes sizes the budget when BodyBudget is 0.
	MaxBodyBytes int64
	// BodyBudget caps the bytes of the bodies being read and of the jobs
	// that hold them, across all requests; 0 means DefaultBodyBudgets
	// times MaxBodyBytes.
	BodyBudget int64
	// MinBodyRate is the slowest a body may arrive, in bytes a second on
	// average after BodyGrace; 0 sets no rate.
	MinBodyRate int64
	// BodyGrace is how long a body may lag behind MinBodyRate.
	BodyGrace time.Duration
	// ReadTimeout is the http.Server's: a body's read deadline never
	// passes it. 0 for none.
	ReadTimeout time.Duration
	// MaxBodiesPerClient caps the bodies one client (Clients.Addr) may be
	// sending at once; 0 sets no cap.
	MaxBodiesPerClient int
	// Clients finds a request's client, for MaxBodiesPerClient.
	Clients Clients
}

// Bodies is what the bodies being read share: the byte budget, made on
// the first read, and the count of each client's bodies. Its zero value
// is ready; it must not be copied after first use.
type Bodies struct {
	mu      sync.Mutex
	budget  *byteBudget
	reading Counter
}

// budgetOf returns the shared budget, sized from l on first use.
func (b *Bodies) budgetOf(l Limits) *byteBudget {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.budget == nil {
		size := l.BodyBudget
		if size <= 0 {
			size = DefaultBodyBudgets * (l.MaxBodyBytes + 1)
		}
		b.budget = newByteBudget(size)
	}
	return b.budget
}

// InUse returns the bytes of the budget held now: 0 before the first read.
func (b *Bodies) InUse() int64 {
	b.mu.Lock()
	budget := b.budget
	b.mu.Unlock()
	if budget == nil {
		return 0
	}
	return budget.inUse()
}

// Reading returns how many bodies the client of key (Key) is sending now.
func (b *Bodies) Reading(key netip.Prefix) int {
	return b.reading.held(key)
}

// Read reads at most limit bytes of r's body within l, taking room in the
// body budget for them as they arrive. It returns the body and its room,
// which the caller releases (or hands on with WithHold). A body declared
// over limit is CodeTooLarge unread; a longer one CodeTooLarge once read
// past limit; a client already reading MaxBodiesPerClient bodies or no
// room within BodyWait CodeBusy; a body too slow CodeTooSlow; a caller
// gone ctx's error.
func (b *Bodies) Read(w http.ResponseWriter, r *http.Request, limit int64, l Limits) ([]byte, *Hold, error) {
	if r.ContentLength > limit {
		return nil, nil, bodyTooLarge(limit)
	}
	done, err := b.count(r, l)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	hold := &Hold{budget: b.budgetOf(l)}
	clock := newBodyClock(w, l)
	body, err := readChunks(r, limit, hold, clock)
	if sandboxd.ErrorCode(err) != sandboxd.CodeTooSlow {
		// A body cut off keeps its deadline, past: else the server would
		// wait for the rest of it, to drain it before answering.
		clock.disarm()
	}
	if err != nil {
		hold.Release()
		return nil, nil, err
	}
	return body, hold, nil
}

// readChunks reads r's body in chunks, taking each chunk's room before it
// is read and giving back what the last one left unfilled. A body of
// declared length, once half of it has arrived, is read on into one buffer
// of its full length (its room taken at once: at most twice what it has
// sent), so that the chunks before it and the joining cost half the body,
// not all of it, in allocations; a chunked body is joined at the end.
func readChunks(r *http.Request, limit int64, hold *Hold, clock *bodyClock) ([]byte, error) {
	want := limit + 1
	declared := r.ContentLength >= 0
	if declared {
		want = r.ContentLength
	}
	var chunks [][]byte
	var got int64
	for eof := false; !eof && got < want; {
		if declared && got > bodyMaxChunk && 2*got >= want {
			return readRest(r, want, got, chunks, hold, clock)
		}
		size := min(max(got, FirstChunk), bodyMaxChunk, want-got)
		waited, err := hold.grow(r.Context(), size)
		if err != nil {
			return nil, err
		}
		clock.waited += waited
		chunk := make([]byte, size)
		n, err := readInto(r, chunk, got, clock)
		got += int64(n)
		chunks, eof = append(chunks, chunk[:n]), err == io.EOF
		if err != nil && !eof {
			return nil, err
		}
	}
	if got > limit {
		return nil, bodyTooLarge(limit)
	}
	hold.keep(got)
	return joinChunks(chunks, got), nil
}

// readRest reads the rest of a body declared want bytes long, got of them
// read into chunks already, into one buffer of want bytes.
func readRest(r *http.Request, want, got int64, chunks [][]byte, hold *Hold, clock *bodyClock) ([]byte, error) {
	hold.keep(got)
	waited, err := hold.grow(r.Context(), want-got)
	if err != nil {
		return nil, err
	}
	clock.waited += waited
	body := make([]byte, 0, want)
	for _, c := range chunks {
		body = append(body, c...)
	}
	n, err := readInto(r, body[got:want], got, clock)
	body = body[:got+int64(n)]
	if err != nil && err != io.EOF {
		return nil, err
	}
	hold.keep(int64(len(body)))
	return body, nil
}

// readInto fills p from r's body, got bytes of which came before, until p
// is full or the body ends (io.EOF), re-arming the rate clock before each
// read.
func readInto(r *http.Request, p []byte, got int64, clock *bodyClock) (int, error) {
	n := 0
	for n < len(p) {
		clock.arm(got + int64(n))
		m, err := r.Body.Read(p[n:])
		n += m
		if err == io.EOF {
			return n, io.EOF
		} else if err != nil {
			return n, readError(err, clock)
		}
	}
	return n, nil
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
