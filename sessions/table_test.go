package sessions

import (
	"context"
	"crypto/sha256"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd"
)

// TestIDsAreUnguessableAndUnique: every id is "ses_" and 32 hex characters
// (128 random bits), no two alike; the table holds only their hashes, and
// the logs show only their first 8 characters.
func TestIDsAreUnguessableAndUnique(t *testing.T) {
	cfg := testConfig()
	cfg.Max, cfg.Memory = 200, 200<<27
	h := newHarness(t, cfg)
	format := regexp.MustCompile(`^ses_[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 200 {
		info := h.mustOpen(t, "python", "")
		if !format.MatchString(info.ID) {
			t.Fatalf("id %q is not ses_ and 32 hex characters", info.ID)
		}
		if seen[info.ID] {
			t.Fatalf("id %q handed out twice", info.ID)
		}
		seen[info.ID] = true
		h.t.mu.Lock()
		_, held := h.t.live[sha256.Sum256([]byte(info.ID))]
		h.t.mu.Unlock()
		if !held {
			t.Fatalf("session %q is not held under its SHA-256", short(info.ID))
		}
		if strings.Contains(h.logs.String(), info.ID) || strings.Contains(h.logs.String(), info.ID[4:]) {
			t.Fatalf("the logs hold the whole id: %s", h.logs.String())
		}
	}
	if !strings.Contains(h.logs.String(), "session=ses_") {
		t.Fatalf("the logs do not name the sessions by their start: %s", h.logs.String())
	}
}

// TestSecondCallWhileOneRunsIs409: a call while another runs waits the
// queue wait, then is CodeConflict; once the first ends, the next runs.
func TestSecondCallWhileOneRunsIs409(t *testing.T) {
	h := newHarness(t, testConfig())
	id := h.mustOpen(t, "python", "").ID
	first, err := h.t.Turn(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := h.t.Get(context.Background(), id); !info.Busy {
		t.Fatal("a session with a call running is not busy")
	}
	began := time.Now()
	_, err = h.t.Turn(context.Background(), id, "")
	wantCode(t, err, sandboxd.CodeConflict, "the session is busy")
	if waited := time.Since(began); waited < 50*time.Millisecond {
		t.Fatalf("refused after %s, before the queue wait", waited)
	}
	// One waiting within the queue wait gets its turn.
	got := make(chan error, 1)
	cfg := h.t.cfg
	h.t.cfg.QueueWait = 5 * time.Second
	go func() {
		turn, err := h.t.Turn(context.Background(), id, "")
		if err == nil {
			turn.Release()
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	first.Release()
	if err := <-got; err != nil {
		t.Fatalf("the waiting call after the first ended: %v", err)
	}
	h.t.cfg = cfg
	h.mustCall(t, id, "")
}

// TestIdleExpiry: a session with no call for the idle timeout is ended by
// the sweep (its container closed, its room given back) and its id
// answers 404 "expired"; a call pushes the deadline back.
func TestIdleExpiry(t *testing.T) {
	h := newHarness(t, testConfig())
	id := h.mustOpen(t, "python", "").ID
	c := h.engine.last()
	h.clock.advance(4 * time.Minute)
	res := h.mustCall(t, id, "")
	if want := h.clock.Now().Add(5 * time.Minute); !res.Session.Expires.Equal(want) {
		t.Fatalf("after a call the session expires at %s, want %s", res.Session.Expires, want)
	}
	h.clock.advance(4 * time.Minute)
	h.t.sweep()
	if _, err := h.t.Get(context.Background(), id); err != nil {
		t.Fatalf("4 minutes after its last call: %v", err)
	}
	h.clock.advance(time.Minute)
	h.t.sweep()
	waitUntil(t, "the container is closed", func() bool { return c.count(&c.closed) == 1 })
	_, err := h.t.Get(context.Background(), id)
	wantCode(t, err, sandboxd.CodeNotFound, "expired: no call came within its idle timeout")
	waitUntil(t, "the room is given back", func() bool { n, m, _ := h.held(); return n == 0 && m == 0 })
	waitUntil(t, "the end is counted as idle", func() bool { return h.obs.endedFor(ReasonIdle) == 1 })
}

// TestLifetimeExpiry: a session called every few minutes still ends at
// its maximum lifetime, but a call in flight then finishes first.
func TestLifetimeExpiry(t *testing.T) {
	h := newHarness(t, testConfig())
	id := h.mustOpen(t, "python", "").ID
	for range 9 {
		h.clock.advance(3 * time.Minute)
		h.mustCall(t, id, "")
		h.t.sweep()
	}
	turn, err := h.t.Turn(context.Background(), id, "") // at 27 min
	if err != nil {
		t.Fatal(err)
	}
	h.clock.advance(4 * time.Minute)
	h.t.sweep()
	if _, err := turn.Run(context.Background(), sandboxd.Job{}); err != nil {
		t.Fatalf("the call in flight at the end of the lifetime: %v", err)
	}
	turn.Release()
	h.t.sweep()
	_, err = h.t.Get(context.Background(), id)
	wantCode(t, err, sandboxd.CodeNotFound, "maximum lifetime")
}

// TestExpiredIDAnswersExpiredBeforeTheSweep: a session past its deadline
// is ended at its next lookup, not served until the sweep.
func TestExpiredIDAnswersExpiredBeforeTheSweep(t *testing.T) {
	h := newHarness(t, testConfig())
	id := h.mustOpen(t, "python", "").ID
	h.clock.advance(6 * time.Minute)
	_, err := h.t.Turn(context.Background(), id, "")
	wantCode(t, err, sandboxd.CodeNotFound, "expired")
	c := h.engine.last()
	waitUntil(t, "the container is closed", func() bool { return c.count(&c.closed) == 1 })
}

// TestCapacityIsRefusedBeforeAnything: past sessions.max or the memory
// budget a hold is CodeBusy with a Retry-After, and nothing is started.
func TestCapacityIsRefusedBeforeAnything(t *testing.T) {
	cfg := testConfig()
	cfg.Max, cfg.Memory = 2, 3<<27 // two python sessions, or one data
	h := newHarness(t, cfg)
	_, err := h.t.Hold(context.Background(), "data", sandboxd.LanguagePython)
	wantCode(t, err, sandboxd.CodeBusy, "every session is taken")
	a := h.mustOpen(t, "python", "")
	h.mustOpen(t, "python", "")
	_, err = h.t.Hold(context.Background(), "python", sandboxd.LanguagePython)
	wantCode(t, err, sandboxd.CodeBusy, "")
	var e *sandboxd.Error
	if !errors.As(err, &e) || e.RetryAfter < time.Second || e.RetryAfter > cfg.IdleTimeout {
		t.Fatalf("retry after %v, want 1s..idle timeout", e.RetryAfter)
	}
	if n := len(h.engine.opened); n != 2 {
		t.Fatalf("%d containers started, want 2", n)
	}
	if err := h.t.Close(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	h.mustOpen(t, "python", "")
	_, err = h.t.Hold(context.Background(), "nope", sandboxd.LanguagePython)
	wantCode(t, err, sandboxd.CodeInvalid, "python")
}

// TestPerPayerCap: one wallet holds at most max_per_payer sessions (busy,
// before anything starts); another wallet and free sessions are not
// counted against it; a released hold gives its claim back.
func TestPerPayerCap(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustOpen(t, "python", "0xa")
	h.mustOpen(t, "python", "0xa")
	hold, err := h.t.Hold(context.Background(), "python", sandboxd.LanguagePython)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, hold.Claim(context.Background(), "0xa", ""), sandboxd.CodeBusy, "this wallet holds 2 sessions already")
	hold.Release()
	if n, _, _ := h.held(); n != 2 {
		t.Fatalf("%d held after a refused claim, want 2", n)
	}
	h.mustOpen(t, "python", "0xb")
	h.mustOpen(t, "python", "")
}

// TestAnotherOwnerIs403AndRunsNothing: a call by another wallet is
// CodeForbidden before it waits or runs, even while the owner's runs.
func TestAnotherOwnerIs403AndRunsNothing(t *testing.T) {
	h := newHarness(t, testConfig())
	id := h.mustOpen(t, "python", "0xowner").ID
	_, err := h.t.Turn(context.Background(), id, "0xother")
	wantCode(t, err, sandboxd.CodeForbidden, "another wallet")
	_, err = h.t.Turn(context.Background(), id, "")
	wantCode(t, err, sandboxd.CodeForbidden, "")
	if n := h.engine.last().count(&h.engine.last().runs); n != 0 {
		t.Fatalf("%d runs after refusals", n)
	}
	h.mustCall(t, id, "0xowner")
}

// TestEndedContainerIs404Ended: a container that ends by itself (between
// calls) or in a call (the result says Ended) takes its session out of
// the table; the id answers 404 with the reason.
func TestEndedContainerIs404Ended(t *testing.T) {
	h := newHarness(t, testConfig())
	id := h.mustOpen(t, "python", "").ID
	c := h.engine.last()
	c.endBy("output between calls")
	waitUntil(t, "the session leaves the table", func() bool { n, _, _ := h.held(); return n == 0 })
	_, err := h.t.Turn(context.Background(), id, "")
	wantCode(t, err, sandboxd.CodeNotFound, "ended: output between calls")
	waitUntil(t, "the end is counted", func() bool { return h.obs.endedFor(ReasonOutputBetweenCalls) == 1 })

	h.engine.result = sandboxd.SessionResult{Result: sandboxd.Result{Status: sandboxd.StatusError, ExitCode: 3},
		Ended: true, EndReason: "the interpreter exited (3)"}
	id = h.mustOpen(t, "python", "").ID
	if res := h.mustCall(t, id, ""); !res.Ended || res.Session.Calls != 1 {
		t.Fatalf("the call that ended the session: %+v", res)
	}
	_, err = h.t.Get(context.Background(), id)
	wantCode(t, err, sandboxd.CodeNotFound, "ended: the interpreter exited (3)")
	waitUntil(t, "the end is counted as the program's", func() bool { return h.obs.endedFor(ReasonEndedByProgram) == 1 })
}

// TestServiceFailureEndsTheSession: a call the container failed to
// deliver is the service's error, and the session ends as failed.
func TestServiceFailureEndsTheSession(t *testing.T) {
	h := newHarness(t, testConfig())
	id := h.mustOpen(t, "python", "").ID
	h.engine.last().err = sandboxd.Errorf(sandboxd.CodeUnavailable, "runtime", "docker went away")
	turn, err := h.t.Turn(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = turn.Run(context.Background(), sandboxd.Job{})
	turn.Release()
	wantCode(t, err, sandboxd.CodeUnavailable, "")
	_, err = h.t.Get(context.Background(), id)
	wantCode(t, err, sandboxd.CodeNotFound, "lost its container")
	waitUntil(t, "the room is given back", func() bool { n, _, _ := h.held(); return n == 0 })
}

// TestFailedStartHoldsNothing: an engine that cannot start the container
// leaves no room held once the hold is released.
func TestFailedStartHoldsNothing(t *testing.T) {
	h := newHarness(t, testConfig())
	h.engine.err = sandboxd.Errorf(sandboxd.CodeUnavailable, "runtime", "no docker")
	hold, err := h.t.Hold(context.Background(), "data", sandboxd.LanguagePython)
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Claim(context.Background(), "0xa", ""); err != nil {
		t.Fatal(err)
	}
	_, err = hold.Start(context.Background())
	wantCode(t, err, sandboxd.CodeUnavailable, "")
	hold.Release()
	hold.Release()
	if n, m, p := h.held(); n != 0 || m != 0 || p != 0 {
		t.Fatalf("held %d sessions, %d bytes, %d payers after a failed start", n, m, p)
	}
}

// TestCloseEndsAndForgetsNothing: DELETE closes the container at once and
// the id answers 404 "closed"; a second close is 404 too.
func TestCloseEndsAndForgetsNothing(t *testing.T) {
	h := newHarness(t, testConfig())
	id := h.mustOpen(t, "python", "0xa").ID
	if err := h.t.Close(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if c := h.engine.last(); c.count(&c.closed) != 1 {
		t.Fatal("the container is not closed when Close returns")
	}
	wantCode(t, h.t.Close(context.Background(), id), sandboxd.CodeNotFound, "was closed")
	if n, m, p := h.held(); n != 0 || m != 0 || p != 0 {
		t.Fatalf("held %d, %d, %d after close", n, m, p)
	}
	// The ended id is forgotten after the max lifetime; unknown then.
	h.clock.advance(31 * time.Minute)
	h.t.sweep()
	_, err := h.t.Get(context.Background(), id)
	wantCode(t, err, sandboxd.CodeNotFound, "unknown")
	_, err = h.t.Get(context.Background(), "ses_"+strings.Repeat("0", 32))
	wantCode(t, err, sandboxd.CodeNotFound, "unknown")
}

// TestRestartLosesAll: Shutdown closes every container and refuses new
// sessions; a new table (a restart) knows none of the old ids.
func TestRestartLosesAll(t *testing.T) {
	h := newHarness(t, testConfig())
	var ids []string
	for range 3 {
		ids = append(ids, h.mustOpen(t, "python", "").ID)
	}
	if err := h.t.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range h.engine.opened {
		if c.count(&c.closed) != 1 {
			t.Fatal("a container outlived the shutdown")
		}
	}
	_, err := h.t.Hold(context.Background(), "python", sandboxd.LanguagePython)
	wantCode(t, err, sandboxd.CodeUnavailable, "stopping")
	if h.obs.endedFor(ReasonShutdown) != 3 {
		t.Fatalf("ended reasons %v", h.obs.ended)
	}
	again := newHarness(t, testConfig())
	for _, id := range ids {
		_, err := again.t.Get(context.Background(), id)
		wantCode(t, err, sandboxd.CodeNotFound, "unknown")
	}
}

// TestConcurrentCallsNeverOverlap: many callers at once on one session
// run one at a time, each either run or refused 409.
func TestConcurrentCallsNeverOverlap(t *testing.T) {
	cfg := testConfig()
	cfg.QueueWait = 2 * time.Second
	h := newHarness(t, cfg)
	id := h.mustOpen(t, "python", "").ID
	var mu sync.Mutex
	running, most := 0, 0
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			turn, err := h.t.Turn(context.Background(), id, "")
			if err != nil {
				if sandboxd.ErrorCode(err) != sandboxd.CodeConflict {
					t.Errorf("turn: %v", err)
				}
				return
			}
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
			turn.Release()
		}()
	}
	wg.Wait()
	if most != 1 {
		t.Fatalf("%d calls ran at once in one session", most)
	}
}

// TestSweeperRemovesExpiredWithinSeconds: with the real clock and the
// sweeper New starts, an idle session's container is closed within a few
// seconds of its deadline, with no lookup to prompt it.
func TestSweeperRemovesExpiredWithinSeconds(t *testing.T) {
	cfg := testConfig()
	cfg.IdleTimeout, cfg.MaxLifetime = 100*time.Millisecond, time.Minute
	engine := &fakeEngine{}
	table := New(engine, cfg, nil)
	t.Cleanup(func() { _ = table.Shutdown(context.Background()) })
	hold, err := table.Hold(context.Background(), "python", sandboxd.LanguagePython)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hold.Release()
	c := engine.last()
	deadline := time.Now().Add(3 * sweepEvery)
	for c.count(&c.closed) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("an idle session still open %s after its deadline", 3*sweepEvery)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSessionKeepsItsLanguage: the language a session is held for reaches
// the engine that starts its container, and every state of it names it.
func TestSessionKeepsItsLanguage(t *testing.T) {
	h := newHarness(t, testConfig())
	ctx := context.Background()
	hold, err := h.t.Hold(ctx, "python", sandboxd.LanguageBash)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release()
	info, err := hold.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.engine.last().lang; got != sandboxd.LanguageBash {
		t.Fatalf("the engine opened a %q session, want bash", got)
	}
	got, err := h.t.Get(ctx, info.ID)
	if err != nil || info.Language != sandboxd.LanguageBash || got.Language != sandboxd.LanguageBash {
		t.Fatalf("opened as %q, then %q (%v); want bash both times", info.Language, got.Language, err)
	}
}
