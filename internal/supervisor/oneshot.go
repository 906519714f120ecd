package supervisor

import (
	"context"
	"fmt"
	"os"

	"sandboxd/internal/runnerproto"
)

// oneShot runs one program and returns the supervisor's exit status.
// Of the warm stub and the spare (either may be nil), the one that runs the
// program's language is used and the other killed.
func (s *Supervisor) oneShot(ctx context.Context, warm, spare *proc, req *request, late bool) int {
	h := req.header
	stub, err := s.stubFor(h.Language)
	if err != nil {
		spare.abandon()
		return s.end(warm, err)
	}
	p, late := pick(warm, spare, stub, late)
	// Written before the program starts; a failure (a full /tmp) is told
	// after the ack, as the program's own failure would be.
	written, failed := writeFiles(s.Root, req.files, false)
	stdin, removeStdin, err := s.writeStdin(req.stdin)
	defer removeStdin()
	if failed == nil {
		failed = err
	}
	if p == nil {
		if p, err = s.startFor(ctx, h.Language, stub, stdin); err != nil {
			return s.end(nil, err)
		}
		late = true
	}
	defer p.kill()
	code, err := s.answer(ctx, p, req, written, stdin, failed, late)
	if err != nil {
		return s.end(p, err)
	}
	return code
}

// answer acks the program, hands it to its stub unless its files in
// failed, pumps its output, and writes its end marker, files out and
// usage; it returns the program's status (137 for SIGKILL, no marker).
func (s *Supervisor) answer(ctx context.Context, p *proc, req *request, written map[string]inFile, stdin string,
	failed error, late bool) (int, error) {
	h := req.header
	// What a warm stub wrote before the program is no program's.
	if err := s.drain(p); err != nil {
		return 0, err
	}
	m := s.note(p)
	ack := runnerproto.AckGo
	if late {
		ack = runnerproto.AckLate
	}
	if err := s.ack(h.Token, ack, false); err != nil {
		return 0, err
	}
	p.forward = true
	code := 1
	if failed != nil {
		fmt.Fprintf(s.Link.Err, "sandbox-supervisor: cannot write the files in: %v\n", failed)
	} else {
		p.send('o', req.code, stdin)
		if _, err := s.await(ctx, p, false, 0); err != nil {
			return 0, err
		}
		var killed bool
		if code, killed = status(p); killed {
			return 137, nil
		}
	}
	p.forward = false
	cpu, peak := s.usage(p, m)
	sec := collect(s.Root, written, nil, h.MaxFiles, h.MaxFilesBytes)
	r := runnerproto.EndReport{Status: code, CPUMS: cpu, MaxRSSKB: peak, FilesLen: sec.len, FilesCut: sec.cut}
	if err := s.report(h.Token, false, r, sec, nil); err != nil {
		return 0, err
	}
	// The stub is killed, not waited for (deferred): what it does after
	// "done" is no call's, and a teardown of its own (Node's takes 8-10
	// ms of a core) would compete with the answer on the host.
	return code, nil
}

// startFor starts the stub of lang for its one-shot: a warm stub waits
// for its ready; a spare reads its stdin's path on 3; any other gets the
// call's stdin as its descriptor 0.
func (s *Supervisor) startFor(ctx context.Context, lang string, stub Stub, stdin string) (*proc, error) {
	if stub.Warm {
		return s.startReady(ctx, lang, false)
	}
	if stub.Spare {
		return s.startStub(lang, startOpts{capAtExec: true})
	}
	var in *os.File
	if stdin != "-" {
		f, err := os.Open(stdin)
		if err != nil {
			return nil, fmt.Errorf("supervisor: %w", err)
		}
		defer f.Close()
		in = f
	}
	return s.startStub(lang, startOpts{stdin: in, capAtExec: true})
}
