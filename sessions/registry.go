package sessions

import (
	"context"
	"encoding/hex"
	"time"

	"sandboxd"
)

// registryTimeout bounds the registry's bookkeeping of a call or an end,
// which is best effort (see sandboxd.SessionRegistry).
const registryTimeout = 5 * time.Second

// hash is the registry's name of s: the SessionHash of its id.
func (s *session) hash() string { return hex.EncodeToString(s.key[:]) }

// register records s, just started, in the fleet's registry. A session
// the registry cannot record could not be found by the other replicas: it
// is ended (its container removed) and the error returned, so that its
// opening is not charged.
func (t *Table) register(ctx context.Context, s *session, info sandboxd.SessionInfo) error {
	if t.cfg.Registry == nil {
		return nil
	}
	err := t.cfg.Registry.Opened(ctx, sandboxd.SessionRecord{Hash: s.hash(), Owner: s.owner, Environment: s.env,
		Created: info.Created, Expires: info.Expires})
	if err == nil {
		t.mu.Lock()
		s.registered = true
		t.mu.Unlock()
		return nil
	}
	t.mu.Lock()
	removed := t.removeLocked(s, ReasonFailed)
	t.mu.Unlock()
	if removed {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		_ = t.finish(closeCtx, s, ReasonFailed)
	}
	t.log.Warn("session not opened: the fleet's registry could not record it", "session", s.short, "err", err)
	if sandboxd.ErrorCode(err) == sandboxd.CodeInternal {
		err = sandboxd.Wrap(sandboxd.CodeUnavailable, "sessions.register", err,
			"the fleet's session registry cannot be written; nothing was charged, open the session again later")
	}
	return err
}

// recordCall tells the registry of a call's end in s. Best effort: a
// failure is logged.
func (t *Table) recordCall(ctx context.Context, s *session, last, expires time.Time) {
	if t.cfg.Registry == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), registryTimeout)
	defer cancel()
	if err := t.cfg.Registry.Called(ctx, s.hash(), last, expires); err != nil {
		t.log.Warn("the fleet's registry did not record a session call", "session", s.short, "err", err)
	}
}

// recordEnd tells the registry that s ended, and why for a person. Best
// effort: a failure is logged (the replica's lease ends its rows if it
// dies).
func (t *Table) recordEnd(s *session, why string) {
	if t.cfg.Registry == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	if err := t.cfg.Registry.Ended(ctx, s.hash(), why); err != nil {
		t.log.Warn("the fleet's registry did not record a session's end", "session", s.short, "err", err)
	}
}
