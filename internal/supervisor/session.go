package supervisor

import (
	"context"
	"errors"
	"fmt"

	"sandboxd/internal/runnerproto"
)

// session runs a session's calls until the host ends it (0), the link
// breaks the protocol (2), or its stub dies (the stub's status, no
// marker: the host sees what it sees when an interpreter dies).
func (s *Supervisor) session(ctx context.Context, warm *proc, h runnerproto.SessionHeader) int {
	stub, err := s.stubFor(h.Language)
	if err != nil {
		return s.end(warm, err)
	}
	p := warm
	if p != nil && (s.Stubs[p.lang].Name != stub.Name || stub.Request != nil) {
		p.kill()
		p = nil
	}
	if p == nil {
		if p, err = s.startReady(ctx, h.Language, true); err != nil {
			return s.end(nil, err)
		}
	}
	defer p.kill()
	if err := s.ack(h.Token, runnerproto.AckGo, false); err != nil {
		return s.end(p, err)
	}
	for {
		m, err := s.next(ctx, p)
		if errors.Is(err, errStubEnded) {
			code, _ := exitCode(p.end)
			return code
		}
		if err == nil {
			err = m.err
		}
		if err == nil && m.req.header.Language != h.Language {
			err = fmt.Errorf("supervisor: a %s call in a %s session", m.req.header.Language, h.Language)
		}
		if err != nil {
			return s.end(p, err)
		}
		if ended, code := s.sessionCall(ctx, p, m.req, h.MaxValue); ended {
			return code
		}
	}
}

// sessionCall runs one call; ended reports that the session is over, with
// the supervisor's exit status.
func (s *Supervisor) sessionCall(ctx context.Context, p *proc, req *request, maxValue int64) (ended bool, code int) {
	h := req.header
	written, failed := writeFiles(s.Root, req.files, true)
	before := snapshot(s.Root, written)
	stdin, removeStdin, err := s.writeStdin(req.stdin)
	defer removeStdin()
	if failed == nil {
		failed = err
	}
	resetPeak(s.Proc, p.pid)
	m := s.note(p)
	p.done, p.rbuf = nil, nil
	p.call++
	// What came since the last call (a thread, an orphan) is no call's.
	if err := s.drain(p); err != nil {
		return true, s.end(p, err)
	}
	if err := s.ack(h.Token, runnerproto.AckGo, true); err != nil {
		return true, s.end(p, err)
	}
	p.forward = true
	code, interrupted := 1, false
	if failed != nil {
		fmt.Fprintf(s.Link.Err, "sandbox-supervisor: cannot write the files in: %v\n", failed)
	} else {
		p.send('s', req.code, stdin)
		if interrupted, err = s.await(ctx, p, true, maxValue); err != nil {
			return true, s.end(p, err)
		}
		if !p.complete() {
			code, _ = exitCode(p.end)
			return true, code
		}
		code = p.done.status
	}
	p.forward = false
	cpu, peak := s.usage(p, m)
	sec := collect(s.Root, written, before, h.MaxFiles, h.MaxFilesBytes)
	r := runnerproto.EndReport{Status: code, CPUMS: cpu, MaxRSSKB: peak, FilesLen: sec.len, FilesCut: sec.cut,
		Interrupted: interrupted}
	var value []byte
	if d := p.done; d != nil && d.hasValue {
		value, r.Value, r.ValueLen = d.value, 1, int64(len(d.value))
		if d.cut {
			r.Value = 2
		}
	}
	if err := s.report(h.Token, true, r, sec, value); err != nil {
		return true, s.end(p, err)
	}
	return false, 0
}
