package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/httpapi/wire"
	"sandboxd/sessions"
)

// fakeSessionEngine opens fakeSessionContainers answering result, or fails
// with err.
type fakeSessionEngine struct {
	mu       sync.Mutex
	err      error
	runErr   error
	result   sandboxd.SessionResult
	opened   []*fakeSessionContainer
	langs    []string
	runs     int
	lastJobs []sandboxd.Job
}

func (e *fakeSessionEngine) OpenSession(_ context.Context, _, lang string) (sandboxd.SessionContainer, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return nil, e.err
	}
	e.langs = append(e.langs, lang)
	c := &fakeSessionContainer{e: e, ended: make(chan struct{})}
	e.opened = append(e.opened, c)
	return c, nil
}

// counts reads how many containers were opened and closed, and the runs.
func (e *fakeSessionEngine) counts() (opened, closed, runs int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.opened {
		if c.closed {
			closed++
		}
	}
	return len(e.opened), closed, e.runs
}

// fakeSessionContainer is one session container of a fakeSessionEngine.
type fakeSessionContainer struct {
	e      *fakeSessionEngine
	closed bool
	ended  chan struct{}
	once   sync.Once
}

func (c *fakeSessionContainer) Run(_ context.Context, job sandboxd.Job) (sandboxd.SessionResult, error) {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	c.e.runs++
	c.e.lastJobs = append(c.e.lastJobs, job)
	return c.e.result, c.e.runErr
}

func (c *fakeSessionContainer) Ended() <-chan struct{} { return c.ended }
func (c *fakeSessionContainer) EndReason() string      { return "closed" }
func (c *fakeSessionContainer) Close(context.Context) error {
	c.e.mu.Lock()
	c.closed = true
	c.e.mu.Unlock()
	c.once.Do(func() { close(c.ended) })
	return nil
}

// sessionsConfig is a small table: two sessions, one per payer.
func sessionsConfig() sessions.Config {
	return sessions.Config{Max: 2, MaxPerPayer: 1, Memory: 2 << 27, Environments: map[string]int64{"python": 1 << 27},
		IdleTimeout: 5 * time.Minute, MaxLifetime: 30 * time.Minute, QueueWait: 20 * time.Millisecond}
}

// newSessionServer returns a test server with sessions of cfg on engine.
func newSessionServer(t *testing.T, engine *fakeSessionEngine, gate *fakeGate, cfg sessions.Config) *Server {
	t.Helper()
	if engine.result.Status == "" {
		engine.result.Status = sandboxd.StatusOK
	}
	srv := newTestServer(&fakeRunner{}, gate)
	table := sessions.New(engine, cfg, nil)
	t.Cleanup(func() { _ = table.Shutdown(context.Background()) })
	srv.Sessions = table
	srv.SessionSettings = SessionSettings{OpenPrice: "0.01", Max: cfg.Max, IdleTimeout: cfg.IdleTimeout, MaxLifetime: cfg.MaxLifetime}
	return srv
}

// mustOpenSession opens a session over srv and returns its answer.
func mustOpenSession(t *testing.T, srv *Server) wire.SessionResponse {
	t.Helper()
	rec := do(t, srv.Handler(), "POST", "/v1/sessions", "")
	if rec.Code != 201 {
		t.Fatalf("open: %d %s", rec.Code, rec.Body)
	}
	var open wire.SessionResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &open); err != nil {
		t.Fatal(err)
	}
	return open
}

// decodeRec decodes rec's JSON body into v.
func decodeRec(t *testing.T, rec *httptest.ResponseRecorder, v any) {
	t.Helper()
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("body %s: %v", rec.Body, err)
	}
}

// doRequest serves req on h and returns the recorded answer.
func doRequest(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
