package sessions

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"sandboxd"
)

// closeTimeout bounds the kill and removal of one session's container,
// after its caller (or the sweeper) let go of it.
const closeTimeout = 30 * time.Second

// sweepEvery is how often the sweeper ends expired sessions: an expired
// session is gone within about this long.
const sweepEvery = time.Second

// Table is the table of live sessions; see sandboxd.Sessions. Shutdown
// ends them all.
type Table struct {
	engine sandboxd.SessionEngine
	cfg    Config
	log    *slog.Logger
	now    func() time.Time

	mu sync.Mutex
	// live are the sessions open, by the hash of their id; ended are the
	// ids that ended, until they are forgotten, so that a late call hears
	// why (and so that no id is ever handed out twice meanwhile).
	live  map[key]*session
	ended map[key]tombstone
	// count and memory are the room held, by sessions open and by holds
	// not started yet; perPayer counts each owner's, perClient each free
	// client's.
	count     int
	memory    int64
	perPayer  map[string]int
	perClient map[string]int
	closing   bool

	// ends counts the containers being closed (Shutdown waits for them).
	ends sync.WaitGroup
	// stop ends the sweeper; swept is closed when it has.
	stop, swept chan struct{}
	shut        sync.Once
}

var _ sandboxd.Sessions = (*Table)(nil)

// session is one live session. Its id is not kept: only its hash (key)
// and the start of it for the logs (short).
type session struct {
	key   key
	short string
	env   string
	// lang is the canonical name of the language the session runs.
	lang  string
	owner string
	// client is the address that opened a free session, as the
	// per-client cap counts it; "" for a paid one.
	client string
	memory int64
	c      sandboxd.SessionContainer
	// registered reports that the fleet's registry recorded it (guarded by
	// the table's mu).
	registered bool

	created time.Time
	// lastCall, calls and busy are guarded by the table's mu.
	lastCall time.Time
	calls    int
	busy     bool

	// turn holds one token while a call runs: calls take it in turn.
	turn chan struct{}
	// done is closed when the session leaves the table.
	done chan struct{}
}

// tombstone is what the table remembers of an ended id: why it ended (for
// the 404's message) and until when it is remembered.
type tombstone struct {
	why   string
	until time.Time
}

// New returns the table of sessions on engine, bounded by cfg (validated
// by the caller), with its sweeper running until Shutdown.
func New(engine sandboxd.SessionEngine, cfg Config, log *slog.Logger) *Table {
	t := newTable(engine, cfg, log, time.Now)
	go t.sweepLoop(sweepEvery)
	return t
}

// newTable returns a table with the clock now and no sweeper (tests sweep
// by hand).
func newTable(engine sandboxd.SessionEngine, cfg Config, log *slog.Logger, now func() time.Time) *Table {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Table{engine: engine, cfg: cfg, log: log, now: now, live: map[key]*session{}, ended: map[key]tombstone{},
		perPayer: map[string]int{}, perClient: map[string]int{}, stop: make(chan struct{}), swept: make(chan struct{})}
	return t
}

// Get returns the state of session id. See sandboxd.Sessions.
func (t *Table) Get(_ context.Context, id string) (sandboxd.SessionInfo, error) {
	s, err := t.lookup(id)
	if err != nil {
		return sandboxd.SessionInfo{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.infoLocked(s, id), nil
}

// Close ends session id and waits (up to closeTimeout, whatever ctx does:
// the room must come back) until its container is removed.
func (t *Table) Close(ctx context.Context, id string) error {
	s, err := t.lookup(id)
	if err != nil {
		return err
	}
	t.mu.Lock()
	removed := t.removeLocked(s, ReasonClosed)
	t.mu.Unlock()
	if !removed {
		return t.gone(id)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	return t.finish(ctx, s, ReasonClosed)
}

// lookup finds the live session of id; a session past its deadline and
// not running a call is ended here rather than at the next sweep. Any
// other id is CodeNotFound, saying whether it ended, expired or is
// unknown.
func (t *Table) lookup(id string) (*session, error) {
	k := keyOf(id)
	t.mu.Lock()
	s, ok := t.live[k]
	if !ok {
		t.mu.Unlock()
		return nil, t.gone(id)
	}
	at, reason := t.expiry(s)
	if s.busy || t.now().Before(at) {
		t.mu.Unlock()
		return s, nil
	}
	t.removeLocked(s, reason)
	t.mu.Unlock()
	t.finishLater(s, reason)
	return nil, t.gone(id)
}

// gone is the CodeNotFound error of an id not in the table: why it ended
// when it is remembered, else unknown.
func (t *Table) gone(id string) error {
	t.mu.Lock()
	ts, ok := t.ended[keyOf(id)]
	t.mu.Unlock()
	if ok {
		return sandboxd.Errorf(sandboxd.CodeNotFound, "sessions.lookup", "%s; open a new one with POST /v1/sessions", ts.why)
	}
	return sandboxd.Errorf(sandboxd.CodeNotFound, "sessions.lookup",
		"no such session: the id is unknown (sessions do not survive a restart of the service); open one with POST /v1/sessions")
}

// expiry is when s ends unless a call comes first, and the reason it will
// end for: the earlier of its idle deadline and the end of its lifetime.
func (t *Table) expiry(s *session) (time.Time, string) {
	last := s.created
	if !s.lastCall.IsZero() {
		last = s.lastCall
	}
	idle, life := last.Add(t.cfg.IdleTimeout), s.created.Add(t.cfg.MaxLifetime)
	if life.Before(idle) {
		return life, ReasonLifetime
	}
	return idle, ReasonIdle
}

// infoLocked is the state of s, whose id is id. t.mu is held.
func (t *Table) infoLocked(s *session, id string) sandboxd.SessionInfo {
	at, _ := t.expiry(s)
	return sandboxd.SessionInfo{ID: id, Environment: s.env, Language: s.lang, Created: s.created, LastCall: s.lastCall, Expires: at,
		IdleTimeout: t.cfg.IdleTimeout, MaxLifetime: t.cfg.MaxLifetime, Calls: s.calls, Busy: s.busy}
}
