package sessions

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// removeLocked takes s out of the table, when it is still in, and
// remembers its id as ended for reason; it reports whether it did. The
// caller then finishes s (finish or finishLater): its room is held until
// its container is gone. t.mu is held.
func (t *Table) removeLocked(s *session, reason string) bool {
	if t.live[s.key] != s {
		return false
	}
	delete(t.live, s.key)
	// Its owner and client hold it no more (their caps count sessions in
	// the table); its room is held until its container is gone (finish).
	t.unclaimLocked(s.owner, s.client)
	t.ended[s.key] = tombstone{why: t.why(reason, s), until: t.now().Add(t.cfg.MaxLifetime)}
	close(s.done)
	t.ends.Add(1)
	return true
}

// why says for a person why a session ended.
func (t *Table) why(reason string, s *session) string {
	switch reason {
	case ReasonClosed:
		return "this session was closed"
	case ReasonIdle:
		return fmt.Sprintf("this session expired: no call came within its idle timeout of %s", t.cfg.IdleTimeout)
	case ReasonLifetime:
		return fmt.Sprintf("this session expired: it reached its maximum lifetime of %s", t.cfg.MaxLifetime)
	case ReasonShutdown:
		return "this session ended: the service is stopping"
	case ReasonFailed:
		return "this session ended: the service lost its container"
	}
	return "this session ended: " + s.c.EndReason()
}

// finish closes the container of s, removed from the table, and gives its
// room back.
func (t *Table) finish(ctx context.Context, s *session, reason string) error {
	defer t.ends.Done()
	err := s.c.Close(ctx)
	t.mu.Lock()
	t.count--
	t.memory -= s.memory
	t.mu.Unlock()
	t.recordEnd(s, t.why(reason, s))
	if t.cfg.Observer != nil {
		t.cfg.Observer.SessionEnded(s.env, reason)
	}
	log := t.log.With("session", s.short, "environment", s.env, "reason", reason, "lived", t.now().Sub(s.created).Round(time.Millisecond))
	if err != nil {
		log.Warn("session ended; its container could not be removed (the reaper removes it at the next start)", "err", err)
		return err
	}
	log.Info("session ended")
	return nil
}

// finishLater finishes s in the background, bounded by closeTimeout.
func (t *Table) finishLater(s *session, reason string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		_ = t.finish(ctx, s, reason)
	}()
}

// end ends s for reason, in the background, unless it left the table
// already.
func (t *Table) end(s *session, reason string) {
	t.mu.Lock()
	removed := t.removeLocked(s, reason)
	t.mu.Unlock()
	if removed {
		t.finishLater(s, reason)
	}
}

// watch ends s as soon as its container ends by itself (the program
// ended the interpreter, output between calls, the container stopped),
// or returns once s left the table.
func (t *Table) watch(s *session) {
	select {
	case <-s.c.Ended():
		t.end(s, endReason(s.c.EndReason()))
	case <-s.done:
	}
}

// endReason is the metrics' reason of a container that ended by itself,
// from the runtime's sentence (session containers say "output between
// calls", "the interpreter did not come back from the interrupt", and
// "could not be frozen" when the service failed to freeze one after a call).
func endReason(why string) string {
	switch {
	case strings.Contains(why, "could not be frozen"):
		return ReasonFailed
	case strings.Contains(why, "output between calls"):
		return ReasonOutputBetweenCalls
	case strings.Contains(why, "interrupt"):
		return ReasonInterrupt
	}
	return ReasonEndedByProgram
}

// sweepLoop sweeps every period until Shutdown.
func (t *Table) sweepLoop(period time.Duration) {
	defer close(t.swept)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			t.sweep()
		case <-t.stop:
			return
		}
	}
}

// sweep ends the sessions past their deadline (a call in flight finishes
// first: it is ended at the first sweep after) and forgets the ended ids
// past theirs.
func (t *Table) sweep() {
	now := t.now()
	type expired struct {
		s      *session
		reason string
	}
	var gone []expired
	t.mu.Lock()
	for _, s := range t.live {
		if at, reason := t.expiry(s); !s.busy && !now.Before(at) && t.removeLocked(s, reason) {
			gone = append(gone, expired{s, reason})
		}
	}
	for k, ts := range t.ended {
		if !now.Before(ts.until) {
			delete(t.ended, k)
		}
	}
	t.mu.Unlock()
	for _, e := range gone {
		t.finishLater(e.s, e.reason)
	}
}

// Shutdown refuses new sessions, ends every session (a call in flight is
// cut off: the service is stopping), and waits until their containers are
// removed or ctx ends.
func (t *Table) Shutdown(ctx context.Context) error {
	t.shut.Do(func() { close(t.stop) })
	t.mu.Lock()
	t.closing = true
	var all []*session
	for _, s := range t.live {
		if t.removeLocked(s, ReasonShutdown) {
			all = append(all, s)
		}
	}
	t.mu.Unlock()
	for _, s := range all {
		t.finishLater(s, ReasonShutdown)
	}
	done := make(chan struct{})
	go func() {
		t.ends.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sessions: containers still being removed at shutdown: %w", ctx.Err())
	}
}
