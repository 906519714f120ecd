package supervisor

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// proc is one started stub: its pid (the leader of its process group) and
// the supervisor's ends of its descriptors.
type proc struct {
	lang string
	stub Stub
	pid  int
	// out and errs are the read ends of the stub's 1 and 2, replies of
	// its 4: raw descriptors, non-blocking, polled (an *os.File would put
	// them in Go's poller, which hides EAGAIN). requests is the write end
	// of its 3, and shell of its 0 when the stub takes its requests there.
	out, errs, replies int
	requests, shell    *os.File
	exited             <-chan exit
	// end is how the stub ended, once it has.
	end *exit
	// ready and done are what the stub said on 4; rbuf holds what it
	// said and was not parsed yet.
	ready bool
	done  *done
	rbuf  []byte
	// call is the number of the session call sent last (from 1), the one
	// a done that names its call must name.
	call int
	// forward reports that the stub's output goes to the link; else it
	// is read and dropped.
	forward bool
}

// startOpts is what a stub gets beyond its table entry.
type startOpts struct {
	// session selects the session's command line.
	session bool
	// stdin is the stub's descriptor 0 (nil: /dev/null, or a pipe for a
	// stub whose requests go there).
	stdin *os.File
	// capAtExec sets the data limit at exec, for a stub started for its
	// one-shot, which is never ready and so never capped at ready.
	capAtExec bool
}

// startStub starts the stub of lang through the supervisor's exec (so its
// limits hold from its first instruction), in a process group of its own,
// with descriptors 0 to 4 and nothing else.
func (s *Supervisor) startStub(lang string, o startOpts) (*proc, error) {
	stub, ok := s.Stubs[lang]
	if !ok || stub.Argv == nil {
		return nil, fmt.Errorf("supervisor: no stub for %q", lang)
	}
	argv := stub.Argv(s.Limits, o.session)
	if len(argv) == 0 {
		return nil, fmt.Errorf("supervisor: the stub of %q has no command line", lang)
	}
	p := &proc{lang: lang, stub: stub}
	var closeAfter []*os.File
	defer func() {
		for _, f := range closeAfter {
			f.Close()
		}
	}()
	stdin := o.stdin
	if stdin == nil && stub.Request != nil && o.session {
		r, w, err := pipe()
		if err != nil {
			return nil, err
		}
		p.shell, stdin = w, r
		closeAfter = append(closeAfter, r)
	}
	if stdin == nil {
		null, err := os.Open(os.DevNull)
		if err != nil {
			return nil, fmt.Errorf("supervisor: %w", err)
		}
		stdin = null
		closeAfter = append(closeAfter, null)
	}
	child, err := p.pipes()
	for _, f := range child {
		if f != nil {
			closeAfter = append(closeAfter, f)
		}
	}
	if err != nil {
		p.close()
		return nil, err
	}
	args := []string{s.Self, ExecCommand, "--stack=" + strconv.FormatUint(stub.Stack, 10)}
	if o.capAtExec {
		args = append(args, "--data="+strconv.FormatInt(s.Limits.Data, 10))
	}
	args = append(append(args, "--"), argv...)
	env := append(append([]string(nil), s.Env...), stub.Env...)
	files := []uintptr{stdin.Fd(), child[0].Fd(), child[1].Fd(), child[2].Fd(), child[3].Fd()}
	attr := &syscall.ProcAttr{Dir: s.Root, Env: env, Files: files, Sys: &syscall.SysProcAttr{Setpgid: true}}
	p.pid, p.exited, err = s.reaper.start(func() (int, error) { return syscall.ForkExec(s.Self, args, attr) })
	if err != nil {
		p.close()
		return nil, fmt.Errorf("supervisor: start the stub of %q: %w", lang, err)
	}
	return p, nil
}

// pipes makes the stub's 1, 2, 3 and 4 and returns the stub's ends.
func (p *proc) pipes() (child [4]*os.File, err error) {
	p.out, p.errs, p.replies = -1, -1, -1
	if p.out, child[0], err = rawPipe(); err != nil {
		return child, err
	}
	if p.errs, child[1], err = rawPipe(); err != nil {
		return child, err
	}
	if child[2], p.requests, err = pipe(); err != nil {
		return child, err
	}
	p.replies, child[3], err = rawPipe()
	return child, err
}

// pipe returns a pipe's read and write ends, close-on-exec.
func pipe() (r, w *os.File, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("supervisor: pipe: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "pipe"), os.NewFile(uintptr(fds[1]), "pipe"), nil
}

// rawPipe returns a pipe whose read end is a raw descriptor that does not
// block, for the poll loop, and whose write end is a stub's.
func rawPipe() (r int, w *os.File, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return -1, nil, fmt.Errorf("supervisor: pipe: %w", err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return -1, nil, fmt.Errorf("supervisor: pipe: %w", err)
	}
	return fds[0], os.NewFile(uintptr(fds[1]), "pipe"), nil
}

// kill ends the stub and its process group with SIGKILL and waits for the
// stub's end.
func (p *proc) kill() {
	if p.end == nil {
		unix.Kill(-p.pid, unix.SIGKILL)
		e := <-p.exited
		p.end = &e
	}
	p.close()
}

// abandon sends the stub and its process group SIGKILL and closes the
// supervisor's ends without waiting for the stub's end: the kernel frees
// a warm node's memory meanwhile (3.6-11 ms of a Bash one-shot's hand-over
// when waited for). The reaper collects the stub as a watched process,
// whose usage no call counts; its process group's others are children of
// the stub, reparented only once it has died, and were no call's either:
// none is abandoned with a call's program in it. A nil p is no stub.
func (p *proc) abandon() {
	if p == nil {
		return
	}
	if p.end == nil {
		unix.Kill(-p.pid, unix.SIGKILL)
	}
	p.close()
}

// signal sends sig to the stub's process group.
func (p *proc) signal(sig unix.Signal) error {
	if err := unix.Kill(-p.pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("supervisor: signal the stub: %w", err)
	}
	return nil
}

// close closes the supervisor's ends of the stub's descriptors.
func (p *proc) close() {
	for _, fd := range []*int{&p.out, &p.errs, &p.replies} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	for _, f := range []**os.File{&p.requests, &p.shell} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
}
