package runtime

import (
	"context"
	"log/slog"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"sandboxd"
)

// outcome is how the watch of one call ended.
type outcome int

const (
	// endedCall: the call's end marker came on both streams.
	endedCall outcome = iota
	// cappedCall: a stream of the call passed the output cap.
	cappedCall
	// untakenCall: the runner did not ack the call within its wait.
	untakenCall
	// stuckCall: the interpreter did not come back from the interrupt.
	stuckCall
	// diedCall: the container stopped, or its output ended, mid-call.
	diedCall
	// endedSession: the session was closed meanwhile (Close).
	endedSession
	// cancelledCall: ctx ended.
	cancelledCall
)

// Run runs job in the session and returns what it did. At the
// environment's timeout the call is interrupted (SIGINT to the runner)
// and answered as a timeout; when the marker does not follow within
// interruptGrace the container is killed and the session ends. A call that
// passes the output cap is killed with its session (output_limit); a
// container that stops mid-call ends the session, answered as a one-shot
// run would be (oom, error with the exit status). Errors are the service's:
// CodeInvalid or CodeTooLarge for files in that break the rules;
// CodeInvalid for a language other than the session's (job.Language ""
// is the session's); a typescript call is transpiled first, and its
// syntax error answered without reaching the session (transpile);
// CodeUnavailable for a session that has ended, one closed during the call
// (Close) or a Docker that went away; ctx's error when ctx ends first (the
// session then ends too).
func (s *Session) Run(ctx context.Context, job sandboxd.Job) (sandboxd.SessionResult, error) {
	if err := checkFilesIn(job.Files, s.d.cfg.MaxFiles, int64(s.d.cfg.MaxFilesBytes)); err != nil {
		return sandboxd.SessionResult{}, err
	}
	if err := s.checkLanguage(job); err != nil {
		return sandboxd.SessionResult{}, err
	}
	job.Language = s.language
	job, syntax := transpile(job, int64(s.d.cfg.MaxOutputBytes))
	if ended, reason := s.endedNow(); ended && syntax != nil {
		return sandboxd.SessionResult{}, sandboxd.Errorf(sandboxd.CodeUnavailable, "runtime.session",
			"the session has ended (%s)", reason)
	}
	if syntax != nil {
		// The session is untouched: its stub never saw the program.
		return sandboxd.SessionResult{Result: *syntax}, nil
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	ctx, _, end, err := s.d.inflight.begin(ctx)
	if err != nil {
		return sandboxd.SessionResult{}, err
	}
	defer end()
	s.stopMeter()
	if err := s.thawForCall(ctx); err != nil {
		return sandboxd.SessionResult{}, err
	}
	proto := newCallProtocol(s.d.cfg.MaxFiles, int64(s.d.cfg.MaxFilesBytes), s.maxOut)
	c := newCall(proto, int(s.d.cfg.MaxOutputBytes), false)
	s.mu.Lock()
	select {
	case <-s.ended:
		reason := s.reason
		s.mu.Unlock()
		return sandboxd.SessionResult{}, sandboxd.Errorf(sandboxd.CodeUnavailable, "runtime.session",
			"the session has ended (%s)", reason)
	default:
	}
	s.cur, s.busy, s.between = c, true, 0
	s.mu.Unlock()
	log := s.log.With("job", job.ID)
	written := s.send(proto.message(s.language, job.Code, job.Stdin, job.Files))
	deadline := newDeadline(s.d.cfg.Timeout, s.d.cfg.Timeout+ackGrace, c.out.ackC)
	defer deadline.Stop()
	cr := &callRun{s: s, c: c, log: log}
	how := cr.watch(ctx, deadline.C)
	res, err := cr.answer(ctx, how, deadline.started())
	<-written
	s.mu.Lock()
	s.cur, s.busy = nil, false
	s.mu.Unlock()
	s.checkDead()
	if err != nil {
		s.end("the service failed during a call")
		return sandboxd.SessionResult{}, err
	}
	res.Ended, res.EndReason = s.endedNow()
	if !res.Ended {
		s.afterCall()
	}
	if res.Ended {
		// As a run's: whoever bounds the sandboxes holds the bound until
		// the container is gone.
		s.mu.Lock()
		res.Gone = s.gone
		s.mu.Unlock()
	}
	log.Debug("session call finished", "status", res.Status, "ended", res.Ended, "duration", res.Duration)
	return res, nil
}

// checkLanguage refuses a call whose job names a language other than the
// session's ("" names the session's), or one not canonical (headerLanguage).
func (s *Session) checkLanguage(job sandboxd.Job) error {
	if job.Language == "" {
		return nil
	}
	lang, err := headerLanguage("runtime.session", job.Language)
	if err == nil && lang != s.language {
		err = sandboxd.Errorf(sandboxd.CodeInvalid, "runtime.session", "the session runs %s, not %s", s.language, lang)
	}
	return err
}

// send writes a call's message on the attach stream, on its own goroutine
// (a program that prints before the runner read everything cannot deadlock
// against it); the channel is closed once the write is over. A failed
// write means the container stopped: the call's outcome says it.
func (s *Session) send(msg []byte) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.b.s.link.Write(msg)
	}()
	return done
}

// endedNow reports whether the session has ended, and why.
func (s *Session) endedNow() (bool, string) {
	select {
	case <-s.ended:
		return true, s.EndReason()
	default:
		return false, ""
	}
}

// callRun is the watch of one call.
type callRun struct {
	s        *Session
	c        *call
	log      *slog.Logger
	timedOut bool
}

// watch waits for the call's end, interrupting it at the deadline.
func (cr *callRun) watch(ctx context.Context, deadline <-chan time.Time) outcome {
	s, c := cr.s, cr.c
	var grace <-chan time.Time
	for {
		select {
		case <-c.done:
			return endedCall
		case <-c.capHit:
			return cappedCall
		case <-deadline:
			deadline = nil
			select {
			case <-c.acked:
			default:
				return untakenCall
			}
			select {
			case <-c.done:
				// The call ended as its deadline came: an interrupt now
				// would reach the interpreter between calls, or late, in
				// the next call.
				return endedCall
			default:
			}
			if cr.interrupt(ctx) {
				// The interpreter ended by itself before its interrupt, and
				// Docker's report of the exit has not come yet (gVisor's
				// teardown delays it on a loaded host): judged by its exit,
				// as a death before the deadline is, not as a timeout.
				return cr.settle(diedCall)
			}
			cr.timedOut = true
			t := time.NewTimer(interruptGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			return stuckCall
		case <-s.readDone:
			return cr.settle(diedCall)
		case <-s.b.exited:
			return cr.settle(diedCall)
		case <-s.ended:
			return cr.settle(endedSession)
		case <-ctx.Done():
			return cancelledCall
		}
	}
}

// settle prefers the call's own end to how picks: the container may stop
// right after the call ended (a thread's os._exit), and its exit may be
// known before the reader has handed over the last bytes.
func (cr *callRun) settle(how outcome) outcome {
	if how == diedCall {
		select {
		case <-cr.s.readDone:
		case <-time.After(exitWait):
		}
	}
	select {
	case <-cr.c.done:
		return endedCall
	default:
		return how
	}
}

// interrupt sends SIGINT to the runner (the container's PID 1). It reports
// whether Docker found the container stopped already (a conflict: "is not
// running"); any other failure is logged, and the grace after the
// interrupt still bounds the call.
func (cr *callRun) interrupt(ctx context.Context) (stopped bool) {
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	err := cr.s.d.cli.ContainerKill(ctx, cr.s.b.id, "SIGINT")
	switch {
	case err == nil:
	case cerrdefs.IsConflict(err):
		cr.log.Debug("interrupt: the container had stopped", "err", err)
		return true
	default:
		cr.log.Warn("interrupting the call failed", "err", err)
	}
	return false
}
