package runtime

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"sandboxd"
)

// sessionJob is the job label of a container started for a session (a warm
// container taken for one keeps the pool's: labels cannot change).
const sessionJob = "session"

// kindSession is the LabelKind of a container started for a session.
const kindSession = "session"

// sessionSet is the registry of a runner's live sessions, so Close ends them.
type sessionSet struct {
	mu   sync.Mutex
	live map[*Session]struct{}
}

// add registers s.
func (ss *sessionSet) add(s *Session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.live == nil {
		ss.live = map[*Session]struct{}{}
	}
	ss.live[s] = struct{}{}
}

// remove unregisters s.
func (ss *sessionSet) remove(s *Session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.live, s)
}

// all returns the live sessions.
func (ss *sessionSet) all() []*Session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]*Session, 0, len(ss.live))
	for s := range ss.live {
		out = append(out, s)
	}
	return out
}

// closeSessions ends every live session (Close).
func (d *Docker) closeSessions(ctx context.Context) error {
	var errs []error
	for _, s := range d.sessions.all() {
		errs = append(errs, s.Close(ctx))
	}
	return errors.Join(errs...)
}

// openSession starts a session: Open, as a sandboxd.SessionContainer (envRunner).
func (d *Docker) openSession(ctx context.Context, language string) (sandboxd.SessionContainer, error) {
	s, err := d.Open(ctx, language)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Open starts a session: it takes an idle warm container from the pool
// (which starts its replacement at once; the taken one leaves the pool's
// memory budget) or starts one, switches its runner into its loop in
// language ("" is python), and returns once the loop has acknowledged (the
// image's preload done). A warm container that turns out dead is replaced
// by a fresh one, once. Errors are as for Run: CodeInvalid for a language
// not canonical; CodeUnavailable when Docker is unreachable, the image is
// missing or the runner is closing; CodeInternal for other failures; ctx's
// error when ctx ends first. Nothing is left on failure. An image that does
// not run the language answers each call with the program's error.
func (d *Docker) Open(ctx context.Context, language string) (*Session, error) {
	language, err := headerLanguage("runtime.session", language)
	if err != nil {
		return nil, err
	}
	ctx, _, end, err := d.inflight.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	log := d.log.With("job", sessionJob)
	for attempt := 1; ; attempt++ {
		b, err := d.sessionBox(ctx, attempt == 1, log)
		if err != nil {
			return nil, err
		}
		s, err := d.switchBox(ctx, b, language)
		switch {
		case errors.Is(err, errNotStarted) && attempt == 1:
			log.Warn("the session's container stopped before its loop started; using a fresh one")
			continue
		case errors.Is(err, errNotStarted):
			return nil, sandboxd.Wrap(sandboxd.CodeInternal, "runtime.session", err,
				"the sandbox stopped before the session started")
		case err != nil:
			return nil, err
		}
		return s, nil
	}
}

// sessionBox returns a box for a session: an idle warm one when pooled and
// there is one, else a fresh one.
func (d *Docker) sessionBox(ctx context.Context, pooled bool, log *slog.Logger) (*box, error) {
	if pooled && d.pool != nil {
		if b := d.pool.takeIdle(); b != nil {
			return b, nil
		}
	}
	return d.prepareAs(ctx, sessionJob, kindSession, log)
}

// switchBox takes the box's attach stream over from its one-shot reader,
// which has read nothing (the runner writes nothing before its first
// header), starts the session's reader, and switches the runner into its
// loop. A box whose reader had read anything, or whose container died, is
// retired: errNotStarted.
func (d *Docker) switchBox(ctx context.Context, b *box, language string) (*Session, error) {
	conn := b.s.link
	_ = conn.SetReadDeadline(time.Now())
	<-b.s.done
	out := b.s.out
	clean := errors.Is(b.s.err, os.ErrDeadlineExceeded) && out.ackSeen == 0 &&
		len(out.stdout.buf) == 0 && len(out.stderr.buf) == 0
	if !clean || b.hasExited() {
		d.retire(b)
		return nil, errNotStarted
	}
	_ = conn.SetReadDeadline(time.Time{})
	s := newSession(d, b, language)
	proto := newProtocol(0, 0)
	c := newCall(proto, int(d.cfg.MaxOutputBytes), true)
	s.cur = c
	d.sessions.add(s)
	go s.readLoop()
	go s.monitor()
	if _, err := conn.Write(sessionHeader(proto.token, int64(d.cfg.MaxOutputBytes), s.language)); err != nil {
		s.end("the session's stdin failed")
		return nil, errNotStarted
	}
	timer := time.NewTimer(d.cfg.Timeout + ackGrace)
	defer timer.Stop()
	select {
	case <-c.done:
		s.mu.Lock()
		s.cur = nil
		s.mu.Unlock()
		s.checkDead()
		s.afterCall()
		return s, nil
	case <-s.readDone:
	case <-b.exited:
	case <-s.ended:
	case <-timer.C:
		s.end("the runner did not start its loop")
		return nil, sandboxd.Errorf(sandboxd.CodeInternal, "runtime.session", "the sandbox did not start the session in time")
	case <-ctx.Done():
		s.end("opening was cancelled")
		return nil, ctxError(ctx, "runtime.session")
	}
	s.end("the container stopped before the session started")
	return nil, errNotStarted
}

// hasExited reports whether the box's container has exited (or the wait
// for it failed).
func (b *box) hasExited() bool {
	select {
	case <-b.exited:
		return true
	default:
		return false
	}
}
