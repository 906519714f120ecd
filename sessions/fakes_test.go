package sessions

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"sandboxd"
)

// fakeEngine opens fakeContainers, or fails with err.
type fakeEngine struct {
	mu     sync.Mutex
	err    error
	opened []*fakeContainer
	// result is what each container's Run answers.
	result sandboxd.SessionResult
}

func (e *fakeEngine) OpenSession(ctx context.Context, env, lang string) (sandboxd.SessionContainer, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return nil, e.err
	}
	c := &fakeContainer{env: env, lang: lang, ended: make(chan struct{}), result: e.result}
	e.opened = append(e.opened, c)
	return c, nil
}

// last is the container opened last.
func (e *fakeEngine) last() *fakeContainer {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.opened[len(e.opened)-1]
}

// fakeContainer answers Run with result (or err), blocking on block when
// set; Close and endBy end it.
type fakeContainer struct {
	env    string
	lang   string
	mu     sync.Mutex
	result sandboxd.SessionResult
	err    error
	block  chan struct{}
	// closeBlock, when not nil, holds Close (a slow removal).
	closeBlock chan struct{}
	runs       int
	closed     int
	reason     string
	ended      chan struct{}
	once       sync.Once
}

func (c *fakeContainer) Run(ctx context.Context, job sandboxd.Job) (sandboxd.SessionResult, error) {
	c.mu.Lock()
	c.runs++
	block, res, err := c.block, c.result, c.err
	c.mu.Unlock()
	if block != nil {
		<-block
	}
	if res.Ended {
		c.endBy(res.EndReason)
	}
	return res, err
}

func (c *fakeContainer) Ended() <-chan struct{} { return c.ended }

func (c *fakeContainer) EndReason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason
}

func (c *fakeContainer) Close(context.Context) error {
	c.mu.Lock()
	c.closed++
	block := c.closeBlock
	c.mu.Unlock()
	if block != nil {
		<-block
	}
	c.endBy("closed")
	return nil
}

// endBy ends the container for reason, as the runtime does when the
// interpreter dies.
func (c *fakeContainer) endBy(reason string) {
	c.once.Do(func() {
		c.mu.Lock()
		c.reason = reason
		c.mu.Unlock()
		close(c.ended)
	})
}

// count reads one of c's counters.
func (c *fakeContainer) count(n *int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *n
}

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fakeObserver counts what the table reports.
type fakeObserver struct {
	mu     sync.Mutex
	opened int
	ended  map[string]int
	calls  int
}

func (o *fakeObserver) SessionOpened(string) { o.mu.Lock(); o.opened++; o.mu.Unlock() }
func (o *fakeObserver) SessionEnded(_, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ended == nil {
		o.ended = map[string]int{}
	}
	o.ended[reason]++
}
func (o *fakeObserver) SessionCalled(string, sandboxd.Status, error) {
	o.mu.Lock()
	o.calls++
	o.mu.Unlock()
}

func (o *fakeObserver) endedFor(reason string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ended[reason]
}

// testConfig is a small table's configuration.
func testConfig() Config {
	return Config{Max: 4, MaxPerPayer: 2, Memory: 4 << 27, Environments: map[string]int64{"python": 1 << 27, "data": 1 << 29},
		IdleTimeout: 5 * time.Minute, MaxLifetime: 30 * time.Minute, QueueWait: 50 * time.Millisecond}
}

// harness is a table over a fake engine and clock, its logs in logs.
type harness struct {
	t      *Table
	engine *fakeEngine
	clock  *fakeClock
	obs    *fakeObserver
	logs   *syncBuffer
}

// newHarness returns a table of cfg over fakes.
func newHarness(tb testing.TB, cfg Config) *harness {
	tb.Helper()
	h := &harness{engine: &fakeEngine{result: sandboxd.SessionResult{Result: sandboxd.Result{Status: sandboxd.StatusOK}}},
		clock: &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}, obs: &fakeObserver{}, logs: &syncBuffer{}}
	cfg.Observer = h.obs
	log := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.t = newTable(h.engine, cfg, log, h.clock.Now)
	tb.Cleanup(func() { _ = h.t.Shutdown(context.Background()) })
	return h
}

// mustOpen opens a session in env for owner and returns its state.
func (h *harness) mustOpen(tb testing.TB, env, owner string) sandboxd.SessionInfo {
	tb.Helper()
	ctx := context.Background()
	hold, err := h.t.Hold(ctx, env, sandboxd.LanguagePython)
	if err != nil {
		tb.Fatalf("hold: %v", err)
	}
	defer hold.Release()
	if err := hold.Claim(ctx, owner, ""); err != nil {
		tb.Fatalf("claim: %v", err)
	}
	info, err := hold.Start(ctx)
	if err != nil {
		tb.Fatalf("start: %v", err)
	}
	return info
}

// mustCall runs one call in session id for owner.
func (h *harness) mustCall(tb testing.TB, id, owner string) sandboxd.SessionResult {
	tb.Helper()
	turn, err := h.t.Turn(context.Background(), id, owner)
	if err != nil {
		tb.Fatalf("turn: %v", err)
	}
	defer turn.Release()
	res, err := turn.Run(context.Background(), sandboxd.Job{ID: "j", Code: "x"})
	if err != nil {
		tb.Fatalf("run: %v", err)
	}
	return res
}

// held reads the room the table holds.
func (h *harness) held() (int, int64, int) {
	h.t.mu.Lock()
	defer h.t.mu.Unlock()
	return h.t.count, h.t.memory, len(h.t.perPayer)
}

// waitUntil polls cond for up to 5 s.
func waitUntil(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// wantCode fails unless err has code and, when set, a message holding
// part.
func wantCode(tb testing.TB, err error, code sandboxd.Code, part string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("no error, want %s", code)
	}
	if got := sandboxd.ErrorCode(err); got != code {
		tb.Fatalf("error %v has code %s, want %s", err, got, code)
	}
	if msg := sandboxd.ErrorMessage(err); part != "" && !bytes.Contains([]byte(msg), []byte(part)) {
		tb.Fatalf("message %q does not say %q", msg, part)
	}
}

// syncBuffer is a bytes.Buffer safe for the table's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
