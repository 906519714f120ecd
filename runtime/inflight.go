package runtime

import (
	"context"
	"sync"

	"sandboxd"
)

// inflight is the registry of runs in progress, so Close can end them.
type inflight struct {
	mu     sync.Mutex
	closed bool
	runs   map[*liveRun]struct{}
	wg     sync.WaitGroup
}

// liveRun is one run in progress: its cancel, and its container once created.
type liveRun struct {
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	id     string
}

// setContainer records the run's container, for Close to kill.
func (f *liveRun) setContainer(id string) {
	f.mu.Lock()
	f.id = id
	f.mu.Unlock()
}

// containerID is the run's container, or "" before it is created.
func (f *liveRun) containerID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.id
}

// begin registers a run. It returns the run's context (cancelled by Close
// with errClosing) and the function that unregisters it; or an error when
// the runner is closed.
func (in *inflight) begin(ctx context.Context) (context.Context, *liveRun, func(), error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return nil, nil, nil, sandboxd.Errorf(sandboxd.CodeUnavailable, "runtime.run", "the service is shutting down")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	f := &liveRun{cancel: cancel}
	in.runs[f] = struct{}{}
	in.wg.Add(1)
	end := func() {
		in.mu.Lock()
		delete(in.runs, f)
		in.mu.Unlock()
		cancel(nil)
		in.wg.Done()
	}
	return ctx, f, end, nil
}

// close refuses new runs and returns those in flight.
func (in *inflight) close() []*liveRun {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.closed = true
	flights := make([]*liveRun, 0, len(in.runs))
	for f := range in.runs {
		flights = append(flights, f)
	}
	return flights
}

// wait returns when every run has ended, or with ctx's error when ctx ends first.
func (in *inflight) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		in.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tasks counts background work (removals of used containers) that Close
// waits for. Unlike a sync.WaitGroup, work may be added while a wait is on.
type tasks struct {
	mu sync.Mutex
	n  int
	// zero is closed when n drops to 0; a new one is made when n leaves 0.
	zero chan struct{}
}

// add counts one more task.
func (t *tasks) add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.zero = make(chan struct{})
	}
	t.n++
}

// done counts a task as ended.
func (t *tasks) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 {
		close(t.zero)
	}
}

// wait returns when no task is left, or with ctx's error when ctx ends first.
func (t *tasks) wait(ctx context.Context) error {
	for {
		t.mu.Lock()
		if t.n == 0 {
			t.mu.Unlock()
			return nil
		}
		zero := t.zero
		t.mu.Unlock()
		select {
		case <-zero:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
