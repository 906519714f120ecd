package sessions

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"sandboxd"
)

// hold is room held for one session (see sandboxd.SessionHold).
type hold struct {
	t      *Table
	env    string
	memory int64
	owner  string
	// claimed, started and released are the hold's steps; one caller
	// uses a hold, in order.
	claimed, started, released bool
}

// Hold holds room for a session in environment: one of sessions.max and
// its environment's memory limit in sessions.memory. See sandboxd.Sessions.
func (t *Table) Hold(_ context.Context, environment string) (sandboxd.SessionHold, error) {
	const op = "sessions.hold"
	mem, ok := t.cfg.Environments[environment]
	if !ok {
		return nil, sandboxd.Errorf(sandboxd.CodeInvalid, op, "environment %q has no sessions; use one of: %s",
			environment, strings.Join(slices.Sorted(maps.Keys(t.cfg.Environments)), ", "))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return nil, sandboxd.Errorf(sandboxd.CodeUnavailable, op, "the service is stopping; open a session again later")
	}
	if t.count >= t.cfg.Max || t.memory+mem > t.cfg.Memory {
		return nil, &sandboxd.Error{Code: sandboxd.CodeBusy, Op: op, RetryAfter: t.retryLocked(""),
			Message: "every session is taken; nothing was charged, retry after the time in Retry-After"}
	}
	t.count++
	t.memory += mem
	return &hold{t: t, env: environment, memory: mem}, nil
}

// retryLocked is when a session (owner's, or any when owner is "") will
// likely have ended: the earliest deadline among them, from 1 s to the
// idle timeout. t.mu is held.
func (t *Table) retryLocked(owner string) time.Duration {
	retry := t.cfg.IdleTimeout
	now := t.now()
	for _, s := range t.live {
		if owner != "" && s.owner != owner {
			continue
		}
		at, _ := t.expiry(s)
		retry = min(retry, at.Sub(now))
	}
	return max(retry, time.Second)
}

// Claim counts the session against owner's cap (sessions.max_per_payer).
func (h *hold) Claim(owner string) error {
	t := h.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if h.claimed || h.released {
		return sandboxd.Errorf(sandboxd.CodeInternal, "sessions.claim", "a hold is claimed once, before it is released")
	}
	if owner != "" && t.cfg.MaxPerPayer > 0 && t.perPayer[owner] >= t.cfg.MaxPerPayer {
		return &sandboxd.Error{Code: sandboxd.CodeBusy, Op: "sessions.claim", RetryAfter: t.retryLocked(owner),
			Message: fmt.Sprintf("this wallet holds %d sessions already, the most one wallet may; close one (DELETE /v1/sessions/{id}) "+
				"or retry after the time in Retry-After; nothing was charged", t.perPayer[owner])}
	}
	h.claimed, h.owner = true, owner
	if owner != "" {
		t.perPayer[owner]++
	}
	return nil
}

// unclaimLocked gives back a session of owner's cap. t.mu is held.
func (t *Table) unclaimLocked(owner string) {
	if owner == "" {
		return
	}
	if t.perPayer[owner]--; t.perPayer[owner] <= 0 {
		delete(t.perPayer, owner)
	}
}

// Start starts the session's container and puts the session in the
// table under a fresh id.
func (h *hold) Start(ctx context.Context) (sandboxd.SessionInfo, error) {
	const op = "sessions.start"
	t := h.t
	if h.started || h.released {
		return sandboxd.SessionInfo{}, sandboxd.Errorf(sandboxd.CodeInternal, op, "a hold starts once, before it is released")
	}
	c, err := t.engine.OpenSession(ctx, h.env)
	if err != nil {
		return sandboxd.SessionInfo{}, err
	}
	t.mu.Lock()
	if t.closing {
		t.mu.Unlock()
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		_ = c.Close(closeCtx)
		return sandboxd.SessionInfo{}, sandboxd.Errorf(sandboxd.CodeUnavailable, op, "the service is stopping; open a session again later")
	}
	id := t.freshIDLocked()
	s := &session{key: keyOf(id), short: short(id), env: h.env, owner: h.owner, memory: h.memory, c: c,
		created: t.now(), turn: make(chan struct{}, 1), done: make(chan struct{})}
	t.live[s.key] = s
	h.started = true
	info := t.infoLocked(s, id)
	t.mu.Unlock()
	go t.watch(s)
	if t.cfg.Observer != nil {
		t.cfg.Observer.SessionOpened(h.env)
	}
	if err := t.register(ctx, s, info); err != nil {
		return sandboxd.SessionInfo{}, err
	}
	t.log.Info("session opened", "session", s.short, "environment", h.env, "owner", h.owner)
	return info, nil
}

// freshIDLocked returns an id that no session of this table has had, live
// or remembered as ended. t.mu is held.
func (t *Table) freshIDLocked() string {
	for {
		id := newID()
		k := keyOf(id)
		_, live := t.live[k]
		_, ended := t.ended[k]
		if !live && !ended {
			return id
		}
	}
}

// Release gives the room back unless the session started.
func (h *hold) Release() {
	t := h.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if h.started || h.released {
		return
	}
	h.released = true
	t.count--
	t.memory -= h.memory
	if h.claimed {
		t.unclaimLocked(h.owner)
	}
}
