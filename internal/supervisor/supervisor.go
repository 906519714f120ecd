package supervisor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
	"sandboxd/internal/runnerproto"
)

// Supervisor runs one container's program or session. Its fields are set
// before Run and not changed after.
type Supervisor struct {
	// Link is the path to the host.
	Link Link
	// Stubs is the stub of each language (Stubs, or a test's).
	Stubs map[string]Stub
	// Languages are the languages this image runs (SANDBOX_LANGUAGES);
	// the first whose stub is warm is started before its program.
	Languages []string
	// Limits are what the stubs' command lines depend on; Limits.Data is
	// also the data limit set on a stub when it is ready.
	Limits Limits
	// Self is the supervisor's executable, run as "exec" to start a stub
	// ("/proc/self/exe").
	Self string
	// Env is every stub's environment before its own: HOME, LANG, PATH.
	Env []string
	// Root is the working directory, where the files in are written and
	// the files out found (/tmp).
	Root string
	// Shm is the directory of a call's stdin file (/dev/shm).
	Shm string
	// Proc is the mount of procfs (/proc).
	Proc string
	// Interrupts carries the service's SIGINT: a session call's interrupt.
	Interrupts <-chan os.Signal

	reaper     *reaper
	wakeR      int
	wakeW      int
	msgs       chan linkMsg
	stopped    chan struct{}
	wakeMu     sync.Mutex
	interrupt  atomic.Bool
	stdinCount int
	// linkFD is the link's descriptor while the loop waits for the first
	// message (else -1), and linkReady reports that it had bytes.
	linkFD    int
	linkReady bool
}

// linkMsg is what the link's reader read: a session's header, a program
// or call, or the error that ended the link.
type linkMsg struct {
	session *runnerproto.SessionHeader
	req     *request
	err     error
}

// Run serves the link until the program or the session is over, and
// returns the supervisor's exit status: the program's, 137 when SIGKILL
// ended its stub (no marker: the host judges the container's exit), a
// session stub's own when it died, 0 when the host ended the session, 2
// for a link that does not speak the protocol or a stub that never
// became ready.
func (s *Supervisor) Run(ctx context.Context) int {
	if err := s.open(ctx); err != nil {
		s.fail(err)
		return 2
	}
	defer s.closeAll()
	var warm *proc
	if lang := s.warmLanguage(); lang != "" {
		p, err := s.startReady(ctx, lang, false)
		if err != nil {
			s.fail(err)
			return 2
		}
		warm = p
	}
	spare, err := s.startSpare(warm)
	if err != nil {
		return s.end(warm, err)
	}
	late := (warm == nil && spare == nil) || pending(s.Link.In)
	r := bufio.NewReaderSize(s.Link.In, 1<<16)
	m, err := s.first(ctx, warm, r)
	if err == nil {
		err = m.err
	}
	switch {
	case err != nil:
		spare.abandon()
		return s.end(warm, err)
	case m.session != nil:
		spare.abandon()
		go s.readCalls(r)
		return s.session(ctx, warm, *m.session)
	default:
		return s.oneShot(ctx, warm, spare, m.req, late)
	}
}

// open starts the reaper and the wake-up pipe.
func (s *Supervisor) open(ctx context.Context) error {
	// Orphans are reparented to the supervisor, PID 1 or not (a test).
	// gVisor refuses the call (EINVAL), where PID 1 is their parent anyway.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil && os.Getpid() != 1 {
		return fmt.Errorf("supervisor: subreaper: %w", err)
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return fmt.Errorf("supervisor: pipe: %w", err)
	}
	s.wakeR, s.wakeW = fds[0], fds[1]
	s.linkFD = -1
	s.msgs = make(chan linkMsg, 1)
	s.reaper = newReaper(s.wake)
	s.stopped = make(chan struct{})
	go func() {
		// ctx's end and the service's interrupts wake the loop, until Run
		// returns.
		for {
			select {
			case <-ctx.Done():
				s.wake()
				return
			case <-s.Interrupts:
				s.interrupt.Store(true)
				s.wake()
			case <-s.stopped:
				return
			}
		}
	}()
	return nil
}

// closeAll stops the reaper and the waker and closes the wake-up pipe,
// which no goroutine that outlives Run (the link's reader) writes after.
func (s *Supervisor) closeAll() {
	close(s.stopped)
	s.reaper.Stop()
	s.wakeMu.Lock()
	defer s.wakeMu.Unlock()
	unix.Close(s.wakeR)
	unix.Close(s.wakeW)
	s.wakeR, s.wakeW = -1, -1
}

// wake makes the poll loop look at the channels.
func (s *Supervisor) wake() {
	s.wakeMu.Lock()
	defer s.wakeMu.Unlock()
	if s.wakeW >= 0 {
		unix.Write(s.wakeW, []byte{0})
	}
}

// warmLanguage is the first language of the image whose stub is warm, or
// "" when none is.
func (s *Supervisor) warmLanguage() string {
	for _, lang := range s.Languages {
		if st, ok := s.Stubs[lang]; ok && st.Warm {
			return lang
		}
	}
	return ""
}

// stubFor returns the stub of lang, or an error when the image does not run
// it.
func (s *Supervisor) stubFor(lang string) (Stub, error) {
	st, ok := s.Stubs[lang]
	if !ok || !slices.Contains(s.Languages, lang) {
		return Stub{}, fmt.Errorf("supervisor: %q is not a language of this image", lang)
	}
	return st, nil
}

// first waits until the link has bytes, dropping what the warm stub p (or
// nil) writes meanwhile, and reads its first message on the loop's own
// goroutine: a one-shot's hand-over then wakes no other thread (a reader
// goroutine's wake-up cost a hello world some 0.1-0.3 ms on a loaded host).
// errStubEnded when the stub ended first.
func (s *Supervisor) first(ctx context.Context, p *proc, r *bufio.Reader) (linkMsg, error) {
	if p != nil {
		p.forward = false
	}
	s.linkFD = int(s.Link.In.Fd())
	defer func() { s.linkFD = -1 }()
	for !s.linkReady && r.Buffered() == 0 {
		if p != nil && p.end != nil {
			return linkMsg{}, errStubEnded
		}
		if err := s.step(ctx, p, 0); err != nil {
			return linkMsg{}, err
		}
	}
	line, err := readLine(r)
	if err == nil && isSession(line) {
		h, err := runnerproto.ParseSessionHeader(line)
		if err != nil {
			return linkMsg{err: err}, nil
		}
		return linkMsg{session: &h}, nil
	}
	var req *request
	if err == nil {
		req, err = readRequest(r, line)
	}
	return linkMsg{req: req, err: err}, nil
}

// readCalls reads a session's calls one after the other, each handed to
// the loop, until the link ends or breaks the protocol.
func (s *Supervisor) readCalls(r *bufio.Reader) {
	for {
		line, err := readLine(r)
		if err != nil {
			s.send(linkMsg{err: err})
			return
		}
		req, err := readRequest(r, line)
		s.send(linkMsg{req: req, err: err})
		if err != nil {
			return
		}
	}
}

// send hands a message to the loop and wakes it, unless Run is over.
func (s *Supervisor) send(m linkMsg) {
	select {
	case s.msgs <- m:
		s.wake()
	case <-s.stopped:
	}
}

// fail tells the host about the supervisor's own failure, on the link's
// stderr: the one channel out of a container.
func (s *Supervisor) fail(err error) {
	fmt.Fprintf(s.Link.Err, "sandbox-supervisor: %v\n", err)
}

// end ends the supervisor for a link that ended or failed: 0 when the host
// closed it, 2 for anything else.
func (s *Supervisor) end(p *proc, err error) int {
	if p != nil {
		p.kill()
	}
	if errors.Is(err, errEnd) {
		return 0
	}
	s.fail(err)
	return 2
}
