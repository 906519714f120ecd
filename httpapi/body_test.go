package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/httpapi/ingress"
	"sandboxd/internal/slots"
)

// TestWaitingJobsStayInTheBudget sends 16 bodies of 1 MiB at once, to
// /v1/code and to /mcp, on a server whose budget holds two, while the
// payment check holds every decoded job: at most two jobs ever wait at
// once (their bytes stay counted until their run is admitted), and the
// others are answered 429 with Retry-After once no room comes within
// ingress.BodyWait, or run once room is back. When the budget was given
// back at decoding, all 16 jobs waited at once, each holding its megabyte.
func TestWaitingJobsStayInTheBudget(t *testing.T) {
	const senders, size = 16, 1 << 20
	for _, path := range []string{"/v1/code", "/mcp"} {
		t.Run(path, func(t *testing.T) {
			gate := &fakeGate{checkBlock: make(chan struct{})}
			api := newTestServer(&fakeRunner{}, gate)
			api.MaxBodyBytes, api.BodyBudget = size, 2*size
			api.Admitter = slots.New(senders, time.Second)
			h := api.Handler()
			payload := `{"code":"print(1)"` + strings.Repeat(" ", size-19) + `}` // the room inside the object: over MCP it is the arguments' own
			answers := make(chan *httptest.ResponseRecorder, senders)
			for range senders {
				go func() {
					req := httptest.NewRequest("POST", path, strings.NewReader(mcpOr(path, payload)))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					answers <- rec
				}()
			}
			time.Sleep(2*ingress.BodyWait + time.Second) // the ones without room give up
			waiting := gate.count(&gate.checked)
			close(gate.checkBlock)
			refused := 0
			for range senders {
				rec := <-answers
				switch {
				case rec.Code == http.StatusTooManyRequests && rec.Header().Get("Retry-After") == "1" &&
					strings.Contains(rec.Body.String(), "too many large requests"):
					refused++
				case rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `"isError":true`):
					t.Errorf("status %d, Retry-After %q: %.300s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
				}
			}
			if waiting > 2 || waiting < 1 || refused < 1 {
				t.Errorf("%d jobs of %d bytes waited at once (the budget holds 2), %d of %d refused", waiting, size, refused, senders)
			}
			if n := api.bodies.InUse(); n != 0 {
				t.Errorf("%d bytes still held in the budget after every answer", n)
			}
		})
	}
}

// mcpOr is payload as the body of path: itself for /v1/code, the
// arguments of a tools/call for /mcp.
func mcpOr(path, payload string) string {
	if path != "/mcp" {
		return payload
	}
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":` + payload + `}}`
}

// TestBodyOverLimitIsNotRead: a body whose Content-Length is over the
// limit is a 413 without a byte read and without room taken in the budget.
func TestBodyOverLimitIsNotRead(t *testing.T) {
	api := newTestServer(&fakeRunner{}, &fakeGate{})
	body := &countingReader{r: strings.NewReader("{}")}
	req := httptest.NewRequest("POST", "/v1/code", body)
	req.ContentLength = api.MaxBodyBytes + 1
	rec := httptest.NewRecorder()
	api.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge || body.reads != 0 {
		t.Fatalf("status %d, reads %d: %s", rec.Code, body.reads, rec.Body)
	}
	if n := api.bodies.InUse(); n != 0 {
		t.Errorf("the refused body kept %d bytes of the budget", n)
	}
}

// countingReader counts its reads.
type countingReader struct {
	r     *strings.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// TestChunkedBodyOverTheLimit: a body of unknown length is read up to
// the limit and refused 413 past it, its room given back.
func TestChunkedBodyOverTheLimit(t *testing.T) {
	api := newTestServer(&fakeRunner{}, &fakeGate{})
	req := httptest.NewRequest("POST", "/v1/code", strings.NewReader(`{"code":"x"}`+strings.Repeat(" ", int(api.MaxBodyBytes))))
	req.ContentLength = -1
	rec := httptest.NewRecorder()
	api.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if n := api.bodies.InUse(); n != 0 {
		t.Errorf("the refused body kept %d bytes of the budget", n)
	}
}

// TestBodyBudgetFreedDuringTheRun: once a call's run is admitted, its
// room in the budget is given back while the program runs, over HTTP and
// MCP: a paid run does not keep large bodies waiting.
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
			held := api.bodies.InUse()
			close(runner.block)
			<-done
			if held != 0 {
				t.Errorf("the run kept %d bytes of the body budget", held)
			}
		})
	}
}
