package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
)

// fakePauser is the Engine API's pause and unpause, in memory: each call
// waits for its gate (when set) and returns the next error queued.
type fakePauser struct {
	mu      sync.Mutex
	calls   []string
	paused  bool
	errs    map[string][]error
	gate    chan struct{}
	entered chan string
}

// newFakePauser returns a fake whose calls return at once.
func newFakePauser() *fakePauser {
	return &fakePauser{errs: map[string][]error{}, entered: make(chan string, 16)}
}

// call records op, waits for the gate, and returns its queued error.
func (p *fakePauser) call(op string) error {
	p.mu.Lock()
	p.calls = append(p.calls, op)
	gate := p.gate
	p.mu.Unlock()
	p.entered <- op
	if gate != nil {
		<-gate
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if q := p.errs[op]; len(q) > 0 {
		p.errs[op] = q[1:]
		return q[0]
	}
	p.paused = op == "pause"
	return nil
}

func (p *fakePauser) ContainerPause(context.Context, string) error   { return p.call("pause") }
func (p *fakePauser) ContainerUnpause(context.Context, string) error { return p.call("unpause") }

// state returns the calls made so far and whether the fake is paused.
func (p *fakePauser) state() ([]string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...), p.paused
}

// waitIdle waits until no freeze or thaw of f is under way.
func waitIdle(tb testing.TB, f *freezer) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		f.mu.Lock()
		busy := f.busy
		f.mu.Unlock()
		if busy == nil {
			return
		}
		<-busy
	}
	tb.Fatal("the freezer stayed busy")
}

func TestFreezerThawWaitsForTheFreeze(t *testing.T) {
	p := newFakePauser()
	p.gate = make(chan struct{})
	f := &freezer{engine: p, id: "c"}
	f.freeze(func(err error) { t.Errorf("freeze failed: %v", err) })
	<-p.entered
	thawed := make(chan error, 1)
	go func() { thawed <- f.thaw(context.Background()) }()
	select {
	case err := <-thawed:
		t.Fatalf("the thaw returned (%v) while the freeze was under way", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(p.gate)
	if err := <-thawed; err != nil {
		t.Fatalf("thaw: %v", err)
	}
	if calls, paused := p.state(); paused || len(calls) != 2 || calls[0] != "pause" || calls[1] != "unpause" {
		t.Errorf("calls %v paused %v, want a pause then an unpause", calls, paused)
	}
}

func TestFreezerThawOfAThawedContainerCallsNothing(t *testing.T) {
	p := newFakePauser()
	f := &freezer{engine: p, id: "c"}
	if err := f.thaw(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.callOver()
	f.freeze(nil)
	f.freeze(nil) // frozen or freezing already: no second pause
	waitIdle(t, f)
	f.callOver()
	f.freeze(nil)
	if calls, _ := p.state(); len(calls) != 1 {
		t.Errorf("calls %v, want one pause", calls)
	}
}

func TestFreezerThawFails(t *testing.T) {
	p := newFakePauser()
	p.errs["unpause"] = []error{errors.New("engine down")}
	f := &freezer{engine: p, id: "c"}
	f.callOver()
	f.freeze(nil)
	waitIdle(t, f)
	if err := f.thaw(context.Background()); err == nil {
		t.Fatal("the failed unpause was no error")
	}
	// Still counted frozen: the close thaws it before the removal.
	<-f.close(func(err error) {
		if err != nil {
			t.Errorf("the close's unpause: %v", err)
		}
	})
	if calls, paused := p.state(); paused || len(calls) != 3 {
		t.Errorf("calls %v paused %v, want pause, unpause (failed), unpause", calls, paused)
	}
	if err := f.thaw(context.Background()); !errors.Is(err, errFreezerClosed) {
		t.Errorf("a thaw after close: %v", err)
	}
}

func TestFreezerFreezeFails(t *testing.T) {
	p := newFakePauser()
	p.errs["pause"] = []error{errors.New("cannot freeze")}
	f := &freezer{engine: p, id: "c"}
	failed := make(chan error, 1)
	f.freeze(func(err error) { failed <- err })
	if err := <-failed; err == nil {
		t.Fatal("failed called without an error")
	}
	// Not frozen: neither the next call nor the removal unpauses.
	if err := f.thaw(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-f.close(nil)
	if calls, _ := p.state(); len(calls) != 1 {
		t.Errorf("calls %v, want the one failed pause", calls)
	}
}

func TestFreezerCloseDuringTheFreeze(t *testing.T) {
	p := newFakePauser()
	p.gate = make(chan struct{})
	f := &freezer{engine: p, id: "c"}
	f.callOver()
	f.freeze(nil)
	<-p.entered
	done := f.close(nil)
	select {
	case <-done:
		t.Fatal("the close was done while the freeze was under way")
	case <-time.After(50 * time.Millisecond):
	}
	close(p.gate)
	<-done
	if calls, paused := p.state(); paused || len(calls) != 2 {
		t.Errorf("calls %v paused %v, want the container thawed for its removal", calls, paused)
	}
	f.callOver()
	f.freeze(nil)
	if calls, _ := p.state(); len(calls) != 2 {
		t.Errorf("a freeze after close paused: %v", calls)
	}
}

func TestFreezerThawCancelledWhileFreezing(t *testing.T) {
	p := newFakePauser()
	p.gate = make(chan struct{})
	defer close(p.gate)
	f := &freezer{engine: p, id: "c"}
	f.callOver()
	f.freeze(nil)
	<-p.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.thaw(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("thaw with its context ended: %v", err)
	}
}

func TestFreezerRetriesAConflict(t *testing.T) {
	p := newFakePauser()
	// dockerd's paused flag, flipped by the late event of the last thaw.
	p.errs["unpause"] = []error{fmt.Errorf("Container c is not paused: %w", cerrdefs.ErrConflict)}
	f := &freezer{engine: p, id: "c"}
	f.callOver()
	f.freeze(nil)
	waitIdle(t, f)
	if err := f.thaw(context.Background()); err != nil {
		t.Fatalf("thaw: %v", err)
	}
	if calls, paused := p.state(); paused || len(calls) != 3 {
		t.Errorf("calls %v paused %v, want the unpause tried again", calls, paused)
	}
}

func TestFreezerCallOffAFreezeSoonAfterAThaw(t *testing.T) {
	p := newFakePauser()
	f := &freezer{engine: p, id: "c"}
	f.callOver()
	f.freeze(nil)
	waitIdle(t, f)
	if err := f.thaw(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Within freezeSpacing of the thaw: the freeze waits, and the next
	// thaw calls it off.
	f.callOver()
	f.freeze(nil)
	if err := f.thaw(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calls, paused := p.state(); paused || len(calls) != 2 {
		t.Errorf("calls %v paused %v, want the second freeze called off", calls, paused)
	}
	f.callOver()
	f.freeze(nil)
	waitIdle(t, f)
	if calls, paused := p.state(); !paused || len(calls) != 3 {
		t.Errorf("calls %v paused %v, want a freeze once the spacing is over", calls, paused)
	}
}

func TestFreezerNeverFreezesDuringACall(t *testing.T) {
	p := newFakePauser()
	f := &freezer{engine: p, id: "c"}
	if err := f.thaw(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A meter that decided late asks during the call: nothing happens.
	f.freeze(nil)
	waitIdle(t, f)
	if calls, paused := p.state(); paused || len(calls) != 0 {
		t.Errorf("calls %v paused %v during a call, want none", calls, paused)
	}
	f.callOver()
	f.freeze(nil)
	time.Sleep(2 * freezeSpacing)
	waitIdle(t, f)
	if _, paused := p.state(); !paused {
		t.Errorf("not frozen once the call was over")
	}
}
