package runtime

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"sandboxd"
)

// interruptGrace is how long after a call's interrupt (SIGINT, at its
// timeout) the interpreter has to come back with the call's end marker
// before the container is killed and the session ends.
const interruptGrace = time.Second

// exitWait bounds how long the session waits for the container's exit
// status once its output has ended, or for the end of its output once it
// has exited.
const exitWait = 2 * time.Second

// Session is one session container: one runner in its loop, running one
// call at a time (sandboxd.SessionContainer). Its attach stream stays open
// for its life, read by one goroutine (session_reader.go).
type Session struct {
	d      *Docker
	b      *box
	log    *slog.Logger
	maxOut int64
	// language is the canonical name of the language the session's
	// runner was switched into; every call runs in it.
	language string

	// runMu makes calls one at a time.
	runMu sync.Mutex

	mu sync.Mutex
	// cur is the call the reader hands output to, nil between calls; busy
	// reports that a call is under way (until its answer is made, after
	// cur is cleared), so the monitor leaves its end to Run.
	cur  *call
	busy bool
	// between counts the bytes drained since the last call began; read
	// counts every payload byte the reader has read in the session's life.
	between, read int64
	reason        string
	// ended is closed once the session has ended; gone once its container
	// is removed.
	ended   chan struct{}
	endOnce sync.Once
	gone    <-chan struct{}

	// readDone is closed when the reader has stopped; readErr says why.
	readDone chan struct{}
	readErr  error

	// frz freezes the container between calls (session_freeze.go), when
	// the meter says so (session_meter.go): meterStop stops the meter of
	// the idle period under way (guarded by mu); restless is set once a
	// call's leftovers used CPU between calls.
	frz       freezer
	meterStop context.CancelFunc
	restless  atomic.Bool
}

var _ sandboxd.SessionContainer = (*Session)(nil)

// newSession returns the session of a box whose stream it now owns.
func newSession(d *Docker, b *box, language string) *Session {
	return &Session{d: d, b: b, log: b.log.With("kind", kindSession), maxOut: int64(d.cfg.MaxOutputBytes),
		language: language, ended: make(chan struct{}), readDone: make(chan struct{}),
		frz: freezer{engine: d.cli, id: b.id}}
}

// Ended is closed once the session has ended, for any reason.
func (s *Session) Ended() <-chan struct{} { return s.ended }

// EndReason says why the session ended; "" while it lives.
func (s *Session) EndReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// end ends the session with the reason, unless it has ended already.
func (s *Session) end(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLocked(reason)
}

// endLocked ends the session: the attach stream closed (the reader stops),
// the container thawed when frozen, then killed and removed in the
// background (Close waits).
func (s *Session) endLocked(reason string) {
	s.endOnce.Do(func() {
		s.reason = reason
		close(s.ended)
		s.stopMeterLocked()
		s.gone = s.d.retireAfter(s.b, s.frz.close(s.unpausedToEnd))
		s.d.sessions.remove(s)
		s.log.Info("session ended", "reason", reason, "read_bytes", s.read)
	})
}

// Close ends the session and waits, until ctx ends, for its container to
// be removed. It may be called more than once.
func (s *Session) Close(ctx context.Context) error {
	s.end("closed")
	s.mu.Lock()
	gone := s.gone
	s.mu.Unlock()
	select {
	case <-gone:
		return nil
	case <-ctx.Done():
		return ctxError(ctx, "runtime.session")
	}
}

// monitor ends the session when its container stops between calls; a call
// under way answers for itself (Run).
func (s *Session) monitor() {
	select {
	case <-s.readDone:
	case <-s.b.exited:
	case <-s.ended:
		return
	}
	s.checkDead()
}

// checkDead ends the session, when no call is under way, if its container
// has stopped or its output ended.
func (s *Session) checkDead() {
	select {
	case <-s.readDone:
	case <-s.b.exited:
	default:
		return
	}
	s.mu.Lock()
	busy := s.busy
	s.mu.Unlock()
	if busy {
		return
	}
	s.end("the interpreter ended between calls (" + s.exitText() + ")")
}

// exitText describes how the container ended, waiting up to exitWait for
// its exit status.
func (s *Session) exitText() string {
	select {
	case <-s.b.exited:
	case <-time.After(exitWait):
	}
	return s.b.exitState()
}
