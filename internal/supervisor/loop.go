package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"
)

// chunk is the most the loop reads from one descriptor at a time.
const chunk = 1 << 16

// errStubEnded is a stub's end where the supervisor needed it alive.
var errStubEnded = errors.New("supervisor: the stub ended")

// step waits until something happens (output, a reply, the stub's end, a
// message from the link, an interrupt, ctx's end) and handles it: output
// goes to the link or is dropped (p.forward), replies are parsed. p may be
// nil (no stub yet). It returns ctx's error once ctx is done.
func (s *Supervisor) step(ctx context.Context, p *proc, maxValue int64) error {
	fds := []unix.PollFd{{Fd: int32(s.wakeR), Events: unix.POLLIN}}
	if s.linkFD >= 0 {
		fds = append(fds, unix.PollFd{Fd: int32(s.linkFD), Events: unix.POLLIN})
	}
	if p != nil {
		for _, fd := range []int{p.out, p.errs, p.replies} {
			if fd >= 0 {
				fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
			}
		}
	}
	if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
		return fmt.Errorf("supervisor: poll: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var buf [chunk]byte
	// Replies first: on "done" the pipes are read dry at once, before the
	// stub's teardown adds to them.
	slices.SortStableFunc(fds[1:], func(a, b unix.PollFd) int {
		return cmp.Compare(b2i(int(b.Fd) == p.replies), b2i(int(a.Fd) == p.replies))
	})
	for _, f := range fds[1:] {
		if f.Revents == 0 {
			continue
		}
		if int(f.Fd) == s.linkFD {
			s.linkReady = true
			continue
		}
		if err := s.readStub(p, int(f.Fd), buf[:], maxValue); err != nil {
			return err
		}
		if p.complete() || p.end != nil {
			break
		}
	}
	if fds[0].Revents != 0 {
		for {
			if n, _ := unix.Read(s.wakeR, buf[:]); n <= 0 {
				break
			}
		}
	}
	if p != nil && p.end == nil {
		select {
		case e := <-p.exited:
			p.end = &e
		default:
		}
	}
	return nil
}

// readStub reads once from one of the stub's descriptors: output to the
// link (or dropped), replies to the parser. At the end of a descriptor (every
// writer closed it) the loop stops polling it.
func (s *Supervisor) readStub(p *proc, fd int, buf []byte, maxValue int64) error {
	n, err := unix.Read(fd, buf)
	if err == unix.EAGAIN || err == unix.EINTR {
		return nil
	}
	if n <= 0 {
		switch fd {
		case p.out:
			p.out = -1
		case p.errs:
			p.errs = -1
		case p.replies:
			p.replies = -1
		}
		unix.Close(fd)
		return nil
	}
	switch fd {
	case p.replies:
		p.rbuf = append(p.rbuf, buf[:n]...)
		if err := p.parseReplies(maxValue); err != nil {
			// A stub (or a program writing on 4) that breaks the protocol
			// ends its own run: it is killed, and judged by its end.
			unix.Kill(-p.pid, unix.SIGKILL)
		}
		return nil
	case p.out:
		return s.forward(p, s.Link.Out.Write, buf[:n])
	default:
		return s.forward(p, s.Link.Err.Write, buf[:n])
	}
}

// forward writes output to the link while the stub's output is the call's.
func (s *Supervisor) forward(p *proc, write func([]byte) (int, error), b []byte) error {
	if !p.forward {
		return nil
	}
	if _, err := write(b); err != nil {
		return fmt.Errorf("supervisor: the link: %w", err)
	}
	return nil
}

// drain reads the stub's output pipes until they are empty: on "done" or
// at the stub's end, everything the call wrote is in them. What comes after
// (a teardown, an orphan) is no longer the call's.
func (s *Supervisor) drain(p *proc) error {
	var buf [chunk]byte
	for _, fd := range []*int{&p.out, &p.errs} {
		for *fd >= 0 {
			n, err := unix.Read(*fd, buf[:])
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				break
			}
			if n == 0 {
				unix.Close(*fd)
				*fd = -1
				break
			}
			write := s.Link.Out.Write
			if fd == &p.errs {
				write = s.Link.Err.Write
			}
			if err := s.forward(p, write, buf[:n]); err != nil {
				return err
			}
		}
	}
	return nil
}

// next waits for the link's next message, dropping what the stub writes
// meanwhile; errStubEnded when the stub ended first.
func (s *Supervisor) next(ctx context.Context, p *proc) (linkMsg, error) {
	if p != nil {
		p.forward = false
	}
	for {
		select {
		case m := <-s.msgs:
			return m, nil
		default:
		}
		if p != nil && p.end != nil {
			return linkMsg{}, errStubEnded
		}
		if err := s.step(ctx, p, 0); err != nil {
			return linkMsg{}, err
		}
	}
}

// startReady starts the stub of lang and waits for its "ready", then sets
// its data limit.
func (s *Supervisor) startReady(ctx context.Context, lang string, session bool) (*proc, error) {
	p, err := s.startStub(lang, startOpts{session: session})
	if err != nil {
		return nil, err
	}
	for !p.ready {
		if p.end != nil {
			p.close()
			return nil, fmt.Errorf("supervisor: the stub of %q ended before it was ready (%s)", lang, describe(p.end))
		}
		if err := s.step(ctx, p, 0); err != nil {
			p.kill()
			return nil, err
		}
	}
	if err := capData(s.Proc, p.pid, s.Limits.Data); err != nil {
		p.kill()
		return nil, err
	}
	return p, nil
}

// describe says how a process ended.
func describe(e *exit) string {
	if e.status.Signaled() {
		return "killed by " + e.status.Signal().String()
	}
	return fmt.Sprintf("exit status %d", e.status.ExitStatus())
}

// b2i is 1 for true.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
