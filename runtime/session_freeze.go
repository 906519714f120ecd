package runtime

import (
	"context"
	"errors"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"sandboxd"
)

// pauser is what a session's freezer needs of the Engine API: the cgroup
// freezer that `docker pause` uses. *client.Client is one; unit tests use
// fakes.
type pauser interface {
	ContainerPause(ctx context.Context, id string) error
	ContainerUnpause(ctx context.Context, id string) error
}

// freezer freezes a session's container between calls, so what a call
// left running (threads, child processes) takes no CPU while no call is
// paid for; the meter (session_meter.go) says when. The Engine API
// freezes it: dockerd then knows it is paused
// (its state, its kill and removal paths), which a write to the cgroup
// behind its back would hide, and the service needs no access to the
// cgroup tree (deploy/sandboxd.service makes it read-only).
//
// A freeze runs in the background, never during a call (from its thaw to
// callOver); a thaw waits for a freeze under way, so the two never
// overlap. Once closed
// (the session ends) no freeze starts, and the container is thawed for its
// removal: under runsc Docker cannot kill a paused container (its kill
// fails, and a forced removal fails after 10 s), and under runc a paused
// one is killed only by the resume Docker sends after the kill.
type freezer struct {
	engine pauser
	id     string

	mu sync.Mutex
	// busy, when not nil, is closed once the freeze or thaw under way has
	// returned.
	busy chan struct{}
	// frozen says the container is paused, or may be: a freeze succeeded,
	// or a thaw after it failed.
	frozen bool
	closed bool
	// thawed is when the last thaw returned; skip, when not nil, is closed
	// to call off a freeze still waiting out freezeSpacing.
	thawed time.Time
	skip   chan struct{}
	// inCall is set from a call's thaw to its end (callOver): no freeze
	// starts meanwhile, whoever asks for it (the meter, late).
	inCall bool
}

// freezeSpacing is the least time from a thaw to the next freeze. dockerd
// sets a container's paused flag both when its own call returns and when
// containerd's event of the change arrives; a thaw's event that arrives
// after the next freeze clears the flag of a frozen container, and the
// container then can be neither paused nor unpaused (seen once in a few
// hundred back-to-back calls). A call shorter than this leaves its
// container running for the rest of it.
const freezeSpacing = 20 * time.Millisecond

// freeze pauses the container in the background, unless the freezer is
// closed or the container is frozen already; failed, when the pause
// fails, is called with its error (on the freeze's goroutine).
func (f *freezer) freeze(failed func(error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || f.frozen || f.busy != nil || f.inCall {
		return
	}
	done, skip := make(chan struct{}), make(chan struct{})
	f.busy, f.skip = done, skip
	wait := time.Until(f.thawed.Add(freezeSpacing))
	go func() {
		if wait > 0 {
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case <-t.C:
			case <-skip:
				// The next call came first: it needs no thaw.
				f.mu.Lock()
				f.busy, f.skip = nil, nil
				f.mu.Unlock()
				close(done)
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		err := settled(ctx, func(ctx context.Context) error { return f.engine.ContainerPause(ctx, f.id) })
		f.mu.Lock()
		f.busy, f.skip = nil, nil
		f.frozen = err == nil
		f.mu.Unlock()
		close(done)
		if err != nil && failed != nil {
			failed(err)
		}
	}()
}

// thaw waits for a freeze under way, then unpauses the container when it
// is frozen; it returns once the container runs again, or with the
// unpause's error (the freezer then still counts it as frozen, so its
// close tries again). It returns errFreezerClosed once the freezer is
// closed: the session has ended.
func (f *freezer) thaw(ctx context.Context) error {
	f.mu.Lock()
	f.inCall = true
	f.mu.Unlock()
	for {
		f.mu.Lock()
		switch {
		case f.closed:
			f.mu.Unlock()
			return errFreezerClosed
		case f.busy != nil:
			busy := f.busy
			if f.skip != nil {
				close(f.skip)
				f.skip = nil
			}
			f.mu.Unlock()
			select {
			case <-busy:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		case !f.frozen:
			f.mu.Unlock()
			return nil
		}
		done := make(chan struct{})
		f.busy = done
		f.mu.Unlock()
		// Not cut short with ctx: dockerd would go on thawing anyway.
		uctx, cancel := cleanupContext(ctx)
		err := settled(uctx, func(ctx context.Context) error { return f.engine.ContainerUnpause(ctx, f.id) })
		cancel()
		f.mu.Lock()
		f.busy = nil
		f.frozen = err != nil
		f.thawed = time.Now()
		f.mu.Unlock()
		close(done)
		return err
	}
}

// callOver ends the call that thaw began: a freeze may start again.
func (f *freezer) callOver() {
	f.mu.Lock()
	f.inCall = false
	f.mu.Unlock()
}

// close stops the freezes and returns a channel closed once the container
// is not frozen: the freeze or thaw under way has returned, and the
// container, when frozen, has been unpaused (or the unpause failed:
// logged by unpaused, and the removal goes on). It may be called more
// than once.
func (f *freezer) close(unpaused func(error)) <-chan struct{} {
	f.mu.Lock()
	f.closed = true
	busy := f.busy
	if f.skip != nil {
		close(f.skip)
		f.skip = nil
	}
	f.mu.Unlock()
	out := make(chan struct{})
	go func() {
		defer close(out)
		if busy != nil {
			<-busy
		}
		f.mu.Lock()
		frozen := f.frozen
		f.frozen = false
		f.mu.Unlock()
		if !frozen {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		err := settled(ctx, func(ctx context.Context) error { return f.engine.ContainerUnpause(ctx, f.id) })
		if unpaused != nil {
			unpaused(err)
		}
	}()
	return out
}

// settleFor is how long a pause or unpause refused as a conflict is tried
// again: dockerd sets a container's paused flag both when its own call
// returns and when containerd's event of the change arrives, so the event
// of the previous thaw, arriving after the next freeze, says "not paused"
// for a moment (seen in back-to-back calls), until that freeze's own event
// sets it again.
const settleFor = time.Second

// settled calls op, again while dockerd refuses it as a conflict, for up
// to settleFor.
func settled(ctx context.Context, op func(context.Context) error) error {
	giveUp := time.Now().Add(settleFor)
	for {
		err := op(ctx)
		if err == nil || !cerrdefs.IsConflict(err) || time.Now().After(giveUp) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// errFreezerClosed is thaw's error once the session has ended.
var errFreezerClosed = errors.New("runtime: the session has ended")

// freezeFailed ends the session whose container could not be frozen, as
// the service's failure. Kept running, it would spend the CPU that no
// call pays for, which is what the freeze is for, and a program that
// found a way to make the freeze fail (runc's freeze gives up on a cgroup
// whose processes keep forking) would keep that CPU for the session's
// life. A container that stopped is the monitor's to end, with its reason.
func (s *Session) freezeFailed(err error) {
	if s.d.cfg.Observe != nil {
		s.d.cfg.Observe("runtime.freeze", 0, err)
	}
	select {
	case <-s.ended:
		return
	default:
	}
	if s.b.dead() {
		return
	}
	s.log.Warn("freezing the session's container failed; ending the session", "err", err)
	s.end("the sandbox could not be frozen after a call")
}

// thawForCall thaws the session's container before a call's message is
// handed over. A thaw that fails ends the session as the service's
// failure: CodeUnavailable, so the call is not charged. A session that
// ended meanwhile is no error here: Run answers for it.
func (s *Session) thawForCall(ctx context.Context) error {
	err := s.frz.thaw(ctx)
	switch {
	case err == nil, errors.Is(err, errFreezerClosed):
		return nil
	case ctx.Err() != nil:
		s.end("the call was cancelled")
		return ctxError(ctx, "runtime.session")
	}
	if s.d.cfg.Observe != nil {
		s.d.cfg.Observe("runtime.thaw", 0, err)
	}
	s.log.Warn("thawing the session's container failed; ending the session", "err", err)
	s.end("the sandbox could not be thawed for a call")
	return sandboxd.Wrap(sandboxd.CodeUnavailable, "runtime.session", err,
		"the session's sandbox could not be resumed, and the session has ended; this call was not charged")
}

// unpausedToEnd logs an unpause before the removal of an ended session's
// container that failed: the removal goes on, and under runsc may fail
// too (then Reap removes it at the next start).
func (s *Session) unpausedToEnd(err error) {
	if err == nil {
		return
	}
	if s.d.cfg.Observe != nil {
		s.d.cfg.Observe("runtime.thaw", 0, err)
	}
	s.log.Warn("thawing the ended session's container failed; removing it anyway", "err", err)
}
