package sessions

import (
	"context"
	"time"

	"sandboxd"
)

// turn is a session's turn for one call (see sandboxd.SessionTurn).
type turn struct {
	t  *Table
	s  *session
	id string
	// ran and released are guarded by t.mu.
	ran, released bool
}

// Turn takes session id's turn for a call paid by owner, waiting up to
// sessions.queue_wait for the call before it. See sandboxd.Sessions.
func (t *Table) Turn(ctx context.Context, id, owner string) (sandboxd.SessionTurn, error) {
	s, err := t.lookup(id)
	if err != nil {
		return nil, err
	}
	if s.owner != owner {
		return nil, sandboxd.Errorf(sandboxd.CodeForbidden, "sessions.turn",
			"this session belongs to the wallet that opened it; a call paid by another wallet is refused, and its payment was not taken")
	}
	if err := t.wait(ctx, s, id); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	at, _ := t.expiry(s)
	if t.live[s.key] != s || !t.now().Before(at) {
		<-s.turn // the sweeper (or the next lookup) ends it
		return nil, t.goneLocked(id)
	}
	s.busy = true
	return &turn{t: t, s: s, id: id}, nil
}

// wait takes s's turn token, waiting up to the queue wait.
func (t *Table) wait(ctx context.Context, s *session, id string) error {
	select {
	case s.turn <- struct{}{}:
		return nil
	default:
	}
	timer := time.NewTimer(t.cfg.QueueWait)
	defer timer.Stop()
	select {
	case s.turn <- struct{}{}:
		return nil
	case <-s.done:
		return t.gone(id)
	case <-timer.C:
		return sandboxd.Errorf(sandboxd.CodeConflict, "sessions.turn",
			"the session is busy; another call is running in it (calls to one session run one at a time): "+
				"wait for its answer, then call again; nothing was charged")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// goneLocked is gone with t.mu held.
func (t *Table) goneLocked(id string) error {
	t.mu.Unlock()
	defer t.mu.Lock()
	return t.gone(id)
}

// Run runs job in the session, once. A call that ended the session (the
// interpreter died, or did not come back from an interrupt) ends it in
// the table too; a service failure ends it as failed.
func (u *turn) Run(ctx context.Context, job sandboxd.Job) (sandboxd.SessionResult, error) {
	t, s := u.t, u.s
	t.mu.Lock()
	if u.ran || u.released {
		t.mu.Unlock()
		return sandboxd.SessionResult{}, sandboxd.Errorf(sandboxd.CodeInternal, "sessions.run", "a turn runs one call, before it is released")
	}
	u.ran = true
	t.mu.Unlock()
	res, err := s.c.Run(ctx, job)
	if t.cfg.Observer != nil {
		t.cfg.Observer.SessionCalled(s.env, res.Status, err)
	}
	if err != nil {
		t.log.Warn("session call failed; ending the session", "session", s.short, "err", err)
		t.end(s, ReasonFailed)
		return sandboxd.SessionResult{}, err
	}
	t.mu.Lock()
	s.calls++
	s.lastCall = t.now()
	res.Session = t.infoLocked(s, u.id)
	res.Session.Busy = false
	t.mu.Unlock()
	if res.Ended {
		t.end(s, endReason(res.EndReason))
	} else {
		t.recordCall(ctx, s, res.Session.LastCall, res.Session.Expires)
	}
	t.log.Debug("session call", "session", s.short, "job", job.ID, "status", res.Status, "ended", res.Ended)
	return res, nil
}

// Release ends the turn: the next call may run.
func (u *turn) Release() {
	t := u.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if u.released {
		return
	}
	u.released = true
	u.s.busy = false
	<-u.s.turn
}
