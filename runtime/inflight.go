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

// tasks counts background work (removals of used containers, kills) that
// Close and WaitRemovals wait for. A wait is for the work added before it
// began: work added meanwhile, such as the removals of runs that return
// later, never holds it up, so a wait on a busy runner ends. Close waits
// only once no run is left to add any.
type tasks struct {
	mu sync.Mutex
	// next is the ticket the next task gets; pending holds the tickets of
	// the tasks not yet ended.
	next    uint64
	pending map[uint64]struct{}
	// ended is closed, and replaced, whenever a task ends.
	ended chan struct{}
}

// add counts one more task and returns its ticket, for done.
func (t *tasks) add() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		t.pending = make(map[uint64]struct{})
		t.ended = make(chan struct{})
	}
	ticket := t.next
	t.next++
	t.pending[ticket] = struct{}{}
	return ticket
}

// done counts the task with the ticket as ended.
func (t *tasks) done(ticket uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pending, ticket)
	close(t.ended)
	t.ended = make(chan struct{})
}

// wait returns when every task added before the call has ended, or with
// ctx's error when ctx ends first.
func (t *tasks) wait(ctx context.Context) error {
	t.mu.Lock()
	before := t.next
	t.mu.Unlock()
	for {
		t.mu.Lock()
		ended, left := t.ended, false
		for ticket := range t.pending {
			if ticket < before {
				left = true
				break
			}
		}
		t.mu.Unlock()
		if !left {
			return nil
		}
		select {
		case <-ended:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
