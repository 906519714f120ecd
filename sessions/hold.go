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
	lang   string
	memory int64
	owner  string
	client string
	// claimed, started and released are the hold's steps; one caller
	// uses a hold, in order.
	claimed, started, released bool
}

// Room reports whether a session could open in environment now, holding
// nothing: one of sessions.max and its environment's memory limit in
// sessions.memory. See sandboxd.Sessions.
func (t *Table) Room(environment string) error {
	mem, err := t.environmentMemory(environment)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.roomLocked(mem)
}

// Hold holds room for a session of language in environment, as Room finds
// it. See sandboxd.Sessions.
func (t *Table) Hold(_ context.Context, environment, language string) (sandboxd.SessionHold, error) {
	mem, err := t.environmentMemory(environment)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.roomLocked(mem); err != nil {
		return nil, err
	}
	t.count++
	t.memory += mem
	return &hold{t: t, env: environment, lang: language, memory: mem}, nil
}

// environmentMemory is the memory a session of environment counts against
// sessions.memory; CodeInvalid for an environment without sessions.
func (t *Table) environmentMemory(environment string) (int64, error) {
	mem, ok := t.cfg.Environments[environment]
	if !ok {
		return 0, sandboxd.Errorf(sandboxd.CodeInvalid, "sessions.hold", "environment %q has no sessions; use one of: %s",
			environment, strings.Join(slices.Sorted(maps.Keys(t.cfg.Environments)), ", "))
	}
	return mem, nil
}

// roomLocked is nil when one more session of memory mem fits. t.mu is
// held.
func (t *Table) roomLocked(mem int64) error {
	const op = "sessions.hold"
	if t.closing {
		return sandboxd.Errorf(sandboxd.CodeUnavailable, op, "the service is stopping; open a session again later")
	}
	if t.count >= t.cfg.Max || t.memory+mem > t.cfg.Memory {
		return &sandboxd.Error{Code: sandboxd.CodeBusy, Op: op, RetryAfter: t.retryLocked(nil),
			Message: "every session is taken; nothing was charged, retry after the time in Retry-After"}
	}
	return nil
}

// retryLocked is when a session that match picks (any, when match is nil)
// will likely have ended: the earliest deadline among them, from 1 s to the
// idle timeout. t.mu is held.
func (t *Table) retryLocked(match func(*session) bool) time.Duration {
	retry := t.cfg.IdleTimeout
	now := t.now()
	for _, s := range t.live {
		if match != nil && !match(s) {
			continue
		}
		at, _ := t.expiry(s)
		retry = min(retry, at.Sub(now))
	}
	return max(retry, time.Second)
}

// Claim counts the session against owner's cap (sessions.max_per_payer,
// across the fleet when the table has a registry) or, in free mode,
// against client's (sessions.max_per_client).
func (h *hold) Claim(ctx context.Context, owner, client string) error {
	const op = "sessions.claim"
	t := h.t
	elsewhere, err := t.heldElsewhere(ctx, owner)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if h.claimed || h.released {
		return sandboxd.Errorf(sandboxd.CodeInternal, op, "a hold is claimed once, before it is released")
	}
	if owner != "" {
		client = "" // a paid session counts against its wallet alone
	}
	if owner != "" && t.cfg.MaxPerPayer > 0 {
		if held := t.perPayer[owner] + elsewhere; held >= t.cfg.MaxPerPayer {
			return &sandboxd.Error{Code: sandboxd.CodeBusy, Op: op, RetryAfter: t.retryLocked(func(s *session) bool { return s.owner == owner }),
				Message: fmt.Sprintf("this wallet holds %d sessions already, the most one wallet may; close one (DELETE /v1/sessions/{id}) "+
					"or retry after the time in Retry-After; nothing was charged", held)}
		}
	}
	if owner == "" && client != "" && t.cfg.MaxPerClient > 0 && t.perClient[client] >= t.cfg.MaxPerClient {
		return &sandboxd.Error{Code: sandboxd.CodeBusy, Op: op, RetryAfter: t.retryLocked(func(s *session) bool { return s.client == client }),
			Message: fmt.Sprintf("this address holds %d sessions already, the most one client may; close one (DELETE /v1/sessions/{id}) "+
				"or retry after the time in Retry-After", t.perClient[client])}
	}
	h.claimed, h.owner, h.client = true, owner, client
	t.claimLocked(owner, client)
	return nil
}

// heldElsewhere counts owner's sessions on the fleet's other replicas: the
// registry's count of the live ones less those of this table it knows of.
// Zero without a registry, a cap or an owner.
func (t *Table) heldElsewhere(ctx context.Context, owner string) (int, error) {
	if t.cfg.Registry == nil || owner == "" || t.cfg.MaxPerPayer == 0 {
		return 0, nil
	}
	n, err := t.cfg.Registry.Held(ctx, owner)
	if err != nil {
		return 0, sandboxd.Wrap(sandboxd.CodeUnavailable, "sessions.claim", err,
			"the fleet's session registry cannot be read; nothing was charged, open the session again later")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.live {
		if s.owner == owner && s.registered {
			n--
		}
	}
	return max(n, 0), nil
}

// claimLocked counts a session for owner and client. t.mu is held.
func (t *Table) claimLocked(owner, client string) {
	if owner != "" {
		t.perPayer[owner]++
	}
	if client != "" {
		t.perClient[client]++
	}
}

// unclaimLocked gives back a session of owner's and client's caps. t.mu
// is held.
func (t *Table) unclaimLocked(owner, client string) {
	if owner != "" {
		if t.perPayer[owner]--; t.perPayer[owner] <= 0 {
			delete(t.perPayer, owner)
		}
	}
	if client != "" {
		if t.perClient[client]--; t.perClient[client] <= 0 {
			delete(t.perClient, client)
		}
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
	c, err := t.engine.OpenSession(ctx, h.env, h.lang)
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
	s := &session{key: keyOf(id), short: short(id), env: h.env, lang: h.lang, owner: h.owner, client: h.client, memory: h.memory, c: c,
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
	t.log.Info("session opened", "session", s.short, "environment", h.env, "language", h.lang, "owner", h.owner)
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
		t.unclaimLocked(h.owner, h.client)
	}
}
