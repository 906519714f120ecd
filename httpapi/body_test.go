package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd"
)

// heldBody is a request body that blocks every read until its bodies are
// let go, counting the bodies being read at once.
type heldBody struct {
	r       io.Reader
	counter *readCounter
	started bool
}

// readCounter counts the bodies whose reading has begun and not ended,
// and the most there ever were at once.
type readCounter struct {
	mu      sync.Mutex
	reading int
	most    int
	letGo   chan struct{}
}

// Read counts the body as being read from its first read on, waits until
// the bodies are let go, then reads; its end stops the count.
func (b *heldBody) Read(p []byte) (int, error) {
	if !b.started {
		b.started = true
		b.counter.mu.Lock()
		b.counter.reading++
		b.counter.most = max(b.counter.most, b.counter.reading)
		b.counter.mu.Unlock()
		<-b.counter.letGo
	}
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.counter.mu.Lock()
		b.counter.reading--
		b.counter.mu.Unlock()
	}
	return n, err
}

// TestBodyBudgetBoundsBodiesReadAtOnce sends 16 bodies of the full size at
// once, to /v1/code and to /mcp, on a server whose budget holds two: at
// most two are ever being read (so at most two bodies' bytes are held), the
// others wait, and those still waiting after bodyWait are answered 429 with
// Retry-After having sent nothing. Without the budget all 16 are read at
// once.
func TestBodyBudgetBoundsBodiesReadAtOnce(t *testing.T) {
	const senders, size = 16, 1 << 20
	for _, path := range []string{"/v1/code", "/mcp"} {
		t.Run(path, func(t *testing.T) {
			api := newTestServer(&fakeRunner{}, &fakeGate{})
			api.MaxBodyBytes, api.BodyBudget = size, 2*size
			h := api.Handler()
			payload := `{"code":"print(1)"}` + strings.Repeat(" ", size-19)
			counter := &readCounter{letGo: make(chan struct{})}
			answers := make(chan *httptest.ResponseRecorder, senders)
			for range senders {
				go func() {
					req := httptest.NewRequest("POST", path, &heldBody{r: strings.NewReader(payload), counter: counter})
					req.ContentLength = int64(len(payload))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					answers <- rec
				}()
			}
			time.Sleep(bodyWait + 500*time.Millisecond) // the waiters give up
			close(counter.letGo)
			refused := 0
			for range senders {
				rec := <-answers
				switch {
				case rec.Code == http.StatusTooManyRequests && rec.Header().Get("Retry-After") == "1" &&
					strings.Contains(rec.Body.String(), "too many large requests"):
					refused++
				case rec.Code == http.StatusTooManyRequests || rec.Code >= 500:
					t.Errorf("status %d, Retry-After %q: %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
				}
			}
			counter.mu.Lock()
			defer counter.mu.Unlock()
			if counter.most > 2 {
				t.Errorf("%d bodies of %d bytes were read at once; the budget holds 2", counter.most, size)
			}
			if counter.most < 1 || refused < 1 || refused > senders-counter.most {
				t.Errorf("read at most %d at once, refused %d of %d", counter.most, refused, senders)
			}
		})
	}
}

// TestBodyOverLimitIsNotRead: a body whose Content-Length is over the
// limit is a 413 without a byte read and without room taken in the budget.
func TestBodyOverLimitIsNotRead(t *testing.T) {
	api := newTestServer(&fakeRunner{}, &fakeGate{})
	counter := &readCounter{letGo: make(chan struct{})}
	req := httptest.NewRequest("POST", "/v1/code", &heldBody{r: strings.NewReader("{}"), counter: counter})
	req.ContentLength = api.MaxBodyBytes + 1
	rec := httptest.NewRecorder()
	api.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge || counter.most != 0 {
		t.Fatalf("status %d, bodies read %d: %s", rec.Code, counter.most, rec.Body)
	}
	sem, size := api.bodyBudget()
	if !sem.TryAcquire(size) {
		t.Error("the refused body kept room in the budget")
	}
}

// TestBodyOfUnknownLengthReservesTheLimit: a chunked body reserves the
// whole limit, so a budget of one body admits one at a time, and gives it
// back when decoded.
func TestBodyOfUnknownLengthReservesTheLimit(t *testing.T) {
	api := newTestServer(&fakeRunner{}, &fakeGate{})
	sem, _ := api.bodyBudget()
	for range 3 {
		req := httptest.NewRequest("POST", "/v1/code", strings.NewReader(`{"code":"x"}`))
		req.ContentLength = -1
		release, err := api.holdBody(req, api.MaxBodyBytes)
		if err != nil {
			t.Fatal(err)
		}
		if sem.TryAcquire(3*(api.MaxBodyBytes+1) + 1) {
			t.Fatal("a chunked body reserved less than the limit")
		}
		release()
		release()
	}
	if !sem.TryAcquire(4 * (api.MaxBodyBytes + 1)) {
		t.Error("the budget did not come back whole")
	}
}

// TestBodyBudgetFreedDuringTheRun: once a call's body is decoded, its room
// in the budget is given back while the program runs, over HTTP and MCP: a
// paid run does not keep large bodies waiting.
func TestBodyBudgetFreedDuringTheRun(t *testing.T) {
	for _, path := range []string{"/v1/code", "/mcp"} {
		t.Run(path, func(t *testing.T) {
			runner := &fakeRunner{block: make(chan struct{}), result: sandboxd.Result{Status: sandboxd.StatusOK}}
			api := newTestServer(runner, &fakeGate{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				if path == "/v1/code" {
					do(t, api.Handler(), "POST", path, `{"code":"x"}`)
					return
				}
				callTool(t, mustMCP(t, api), map[string]any{"code": "x"}, nil)
			}()
			for runner.ran() == 0 {
				time.Sleep(time.Millisecond)
			}
			sem, size := api.bodyBudget()
			free := sem.TryAcquire(size)
			close(runner.block)
			<-done
			if !free {
				t.Error("the run kept room in the body budget")
			}
		})
	}
}
