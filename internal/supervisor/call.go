package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"sandboxd/internal/runnerproto"
)

// maxReport is the largest number a marker's 10-digit field holds.
const maxReport = 9999999999

// mark is what the supervisor notes at a call's hand-over, to measure it.
type mark struct {
	cpu, orphans int64
}

// note notes the stub's CPU time so far and marks the orphans'.
func (s *Supervisor) note(p *proc) mark {
	cpu, _ := procCPU(s.Proc, p.pid)
	return mark{cpu: cpu, orphans: s.reaper.mark()}
}

// usage returns the call's CPU time since m and its peak: the stub's CPU
// then (its own and its reaped children's, from /proc, or wait4's rusage
// once it ended) plus the orphans reaped meanwhile, and its peak (VmHWM,
// or the rusage's) or an orphan's when larger.
func (s *Supervisor) usage(p *proc, m mark) (cpu, peak int64) {
	if p.end == nil {
		var err error
		if cpu, err = procCPU(s.Proc, p.pid); err == nil {
			peak, _, _, _ = procStatus(s.Proc, p.pid)
		}
		if err == nil && peak == 0 {
			// No peak: gVisor's, or the stub ended between the reads.
			_, err = procCPU(s.Proc, p.pid)
		}
		if errors.Is(err, errGone) {
			// It ended after "done": its usage is wait4's.
			e := <-p.exited
			p.end = &e
		}
	}
	if p.end != nil {
		cpu, peak = rusageMS(&p.end.usage), p.end.usage.Maxrss
	}
	orphans, orphanPeak := s.reaper.since(m.orphans)
	cpu = max(cpu-m.cpu, 0) + orphans
	return min(cpu, maxReport), min(max(peak, orphanPeak), maxReport)
}

// writeStdin writes a call's stdin into a file of its own under the shm
// directory (0600), and returns its path ("-" for none) and what removes
// it at the call's end. A name a program left there is unlinked, never
// followed.
func (s *Supervisor) writeStdin(data []byte) (string, func(), error) {
	if len(data) == 0 {
		return "-", func() {}, nil
	}
	s.stdinCount++
	path := filepath.Join(s.Shm, ".stdin-"+strconv.Itoa(s.stdinCount))
	unix.Unlink(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", func() {}, fmt.Errorf("stdin: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	remove := func() { os.Remove(path) }
	if err != nil {
		remove()
		return "", func() {}, fmt.Errorf("stdin: %w", err)
	}
	return path, remove, nil
}

// ack writes "<Magic><token>:<what>\n" on stdout, and on stderr too
// with both. An interrupt that came before it is no call's.
func (s *Supervisor) ack(token, what string, both bool) error {
	s.interrupt.Store(false)
	b := []byte(runnerproto.Magic + token + ":" + what + "\n")
	if _, err := s.Link.Out.Write(b); err != nil {
		return fmt.Errorf("supervisor: the link: %w", err)
	}
	if both {
		if _, err := s.Link.Err.Write(b); err != nil {
			return fmt.Errorf("supervisor: the link: %w", err)
		}
	}
	return nil
}

// send hands the call to the stub, from a goroutine of its own (a large
// program fills the pipe until the stub reads it, and the loop must pump
// meanwhile): the stub protocol's "call", or the session line of a stub
// that takes it on 0, or the bare code of a stub that is not warm (after its
// stdin's path when it is a spare), whose 3 is then closed.
func (p *proc) send(mode byte, code []byte, stdin string) {
	requests, shell, stub, call := p.requests, p.shell, p.stub, p.call
	go func() {
		switch {
		case mode == 'o' && !stub.Warm:
			if stub.Spare {
				path := stdin
				if path == "-" {
					path = os.DevNull
				}
				requests.Write([]byte(path + "\n"))
			}
			requests.Write(code)
			requests.Close()
		case mode == 's' && stub.Request != nil:
			shell.Write(stub.Request(code, stdin, call))
			requests.Write(code)
		default:
			line := fmt.Sprintf("call %c %d %s\n", mode, len(code), stdin)
			requests.Write(append([]byte(line), code...))
		}
	}()
}

// await pumps until the stub says "done" (its value included) or ends,
// then reads its pipes dry. In a session call, the service's interrupt
// (since the ack) is sent to the stub's group, and reported; again every
// Stub.Reinterrupt until then, for a stub that says so.
func (s *Supervisor) await(ctx context.Context, p *proc, session bool, maxValue int64) (interrupted bool, err error) {
	stop := func() {}
	defer func() { stop() }()
	for !p.complete() && p.end == nil {
		if err := s.step(ctx, p, maxValue); err != nil {
			return interrupted, err
		}
		// Not once the stub is back: a shell that comes back from an
		// interrupt runs its own commands, which a late one would cut.
		if !p.complete() && p.end == nil && s.interrupt.Swap(false) && session {
			if err := p.signal(unix.SIGINT); err != nil {
				return interrupted, err
			}
			if !interrupted && p.stub.Reinterrupt > 0 {
				stop = s.repeatInterrupt(p.stub.Reinterrupt)
			}
			interrupted = true
		}
	}
	return interrupted, s.drain(p)
}

// repeatInterrupt makes the loop see the service's interrupt again every d,
// until stop is called; once stop returns it no longer does (what it stored
// meanwhile the next call's ack clears).
func (s *Supervisor) repeatInterrupt(d time.Duration) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				s.interrupt.Store(true)
				s.wake()
			}
		}
	}()
	return func() {
		close(quit)
		wg.Wait()
	}
}

// status is the call's exit status: done's, or the stub's end's (128 +
// the signal that killed it); killed reports SIGKILL, which gets no marker.
func status(p *proc) (code int, killed bool) {
	if p.complete() {
		return p.done.status, false
	}
	return exitCode(p.end)
}

// exitCode is a process's exit status as a shell reports it.
func exitCode(e *exit) (int, bool) {
	if e.status.Signaled() {
		return 128 + int(e.status.Signal()), e.status.Signal() == unix.SIGKILL
	}
	return e.status.ExitStatus() & 0xff, false
}

// report writes the end marker on both streams, and after it on stdout the
// files section and the value.
func (s *Supervisor) report(token string, session bool, r runnerproto.EndReport, sec *section, value []byte) error {
	marker := r.Append(nil, token, session)
	if _, err := s.Link.Out.Write(marker); err != nil {
		sec.close()
		return fmt.Errorf("supervisor: the link: %w", err)
	}
	if err := sec.write(s.Link.Out); err != nil {
		return fmt.Errorf("supervisor: the link: %w", err)
	}
	if _, err := s.Link.Out.Write(value); err != nil {
		return fmt.Errorf("supervisor: the link: %w", err)
	}
	if _, err := s.Link.Err.Write(marker); err != nil {
		return fmt.Errorf("supervisor: the link: %w", err)
	}
	return nil
}
