package runtime

import (
	"context"
	"fmt"
	"time"

	"sandboxd"
	"sandboxd/internal/runnerproto"
)

// answer turns the watch's outcome into the call's result, ending the
// session on every outcome but the call's own end. The call is detached
// from the reader first, so its output no longer changes.
func (cr *callRun) answer(ctx context.Context, how outcome, started time.Time) (sandboxd.SessionResult, error) {
	s, c := cr.s, cr.c
	s.mu.Lock()
	s.cur = nil
	s.mu.Unlock()
	var res sandboxd.SessionResult
	res.TimedOut = cr.timedOut
	switch how {
	case endedCall:
		rep, ok := c.out.ended()
		if !ok {
			// Both streams ended at markers that disagree: a program that
			// forged one on one stream. Its own session pays for it.
			s.end("the call's end was not reported consistently")
			res.ExitCode = 1
			break
		}
		res.ExitCode = rep.Status
		res.Usage = &sandboxd.Usage{CPU: time.Duration(rep.CPUMS) * time.Millisecond, MaxRSSKB: rep.MaxRSSKB}
		cr.filesAndValue(&res, rep)
	case cappedCall:
		s.end("the call passed the output cap")
		res.ExitCode = exitKilled
	case untakenCall:
		s.end("the interpreter did not take the call")
		res.ExitCode = exitKilled
	case stuckCall:
		s.end("the interpreter did not come back from the interrupt")
		res.ExitCode = exitKilled
	case diedCall:
		if err := cr.died(ctx, &res); err != nil {
			return res, err
		}
	case endedSession:
		// Ended from outside mid-call (Close: a DELETE, the service
		// stopping): the service's doing, not the program's, so the call is
		// not delivered and not charged.
		return res, sandboxd.Errorf(sandboxd.CodeUnavailable, "runtime.session",
			"the session was closed while this call ran (DELETE, or the service stopping); the call was not charged")
	case cancelledCall:
		s.end("the call was cancelled")
		return res, ctxError(ctx, "runtime.session")
	}
	res.Duration = time.Since(started)
	c.out.finish()
	res.Truncated = c.out.truncated()
	res.Stdout = decode(c.out.stdout.buf)
	res.Stderr = decode(c.out.stderr.buf)
	res.Classify()
	return res, nil
}

// filesAndValue fills in the files out and the value that followed the
// end marker on stdout. A section that does not parse (a program can forge
// one) gives no files, and FilesTruncated.
func (cr *callRun) filesAndValue(res *sandboxd.SessionResult, rep runnerproto.EndReport) {
	section := cr.c.out.files.buf
	files, listed, err := parseFiles(section[:rep.FilesLen], cr.s.d.cfg.MaxFiles, int64(cr.s.d.cfg.MaxFilesBytes))
	if err != nil {
		cr.log.Warn("the files out were not read", "err", err)
	}
	res.Files = files
	res.FilesTruncated = rep.FilesCut || listed || err != nil
	if rep.Value != 0 {
		v := decode(section[rep.FilesLen:])
		res.Value = &v
	}
}

// died judges a call whose container stopped under it, as a one-shot run
// is judged by its exit (run.awaitEnd), and ends the session with why.
func (cr *callRun) died(ctx context.Context, res *sandboxd.SessionResult) error {
	s := cr.s
	select {
	case <-s.b.exited:
	case <-time.After(exitWait):
	}
	if !s.b.hasExited() || s.b.waitErr != nil {
		s.end("the interpreter's output ended")
		res.ExitCode = exitKilled
		return nil
	}
	exit := s.b.exitCode
	res.ExitCode = exit
	if exit == exitKilled || exit == exitTerminated {
		r := &run{d: s.d, b: s.b, log: cr.log}
		if err := r.judgeSignal(ctx, exit); err != nil {
			s.end("Docker stopped during the call")
			return err
		}
		res.OOMKilled = r.res.OOMKilled
	}
	if res.OOMKilled {
		s.end("the kernel's OOM killer ended the interpreter")
	} else {
		s.end(fmt.Sprintf("the interpreter ended (exit status %d)", exit))
	}
	return nil
}
