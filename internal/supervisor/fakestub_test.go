package supervisor

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// fakeStub is a stub of the stub protocol that runs programs of a small
// language of its own, a command a line:
//
//	out TEXT, err TEXT   write TEXT and a newline on 1 or 2
//	cat                  copy the call's stdin to 1
//	status N, value TEXT the call's status and value
//	exit N               exit at once, without "done"
//	kill SIG             kill itself with SIG (TERM or KILL)
//	write NAME TEXT      write a file under the working directory
//	symlink TARGET NAME  make a symlink
//	after TEXT           (one-shot) write TEXT on 1 after "done"
//	orphan TEXT          start a child that writes TEXT on 1 in 200 ms
//	burn MS              spin for MS milliseconds of CPU
//	waitint              write "waiting", wait for SIGINT (status 130), at most 10 s
//	replies TEXT         write TEXT and a newline on 4 (a forged reply)
//	orphanburn MS        leave an orphan that spins for MS milliseconds
//	sleep MS             sleep for MS milliseconds
//	big N                write N bytes on 1
//	limits               write its data and stack limits, oom_score_adj,
//	                     process group, environment and descriptors 0-9
//
// Its mode (the first argument): warm (says ready, then serves calls),
// shell (a warm stub whose session requests come on 0 as "run s N PATH"),
// noready (never says it), dies (exits 3 at once), direct (a one-shot
// stub started for its call: code on 3, stdin on 0, its end its exit).
func fakeStub(args []string) int {
	startFDs = openFDs()
	requests, replies := os.NewFile(3, "requests"), os.NewFile(4, "replies")
	switch args[0] {
	case "direct":
		code, _ := io.ReadAll(requests)
		p := &fakeProgram{stdin: os.Stdin, replies: replies}
		p.run(string(code))
		return p.status
	case "noready":
		time.Sleep(time.Hour)
		return 0
	case "dies":
		return 3
	}
	replies.WriteString("ready\n")
	r := bufio.NewReader(requests)
	lines, format := r, "call %c %d %s\n"
	if args[0] == "shell" {
		// Its requests come on 0 in its own syntax, the code on 3.
		lines, format = bufio.NewReader(os.Stdin), "run %c %d %s\n"
	}
	for {
		line, err := lines.ReadString('\n')
		if err != nil {
			return 0
		}
		var mode byte
		var n int
		var path string
		if _, err := fmt.Sscanf(line, format, &mode, &n, &path); err != nil {
			return 99
		}
		code := make([]byte, n)
		if _, err := io.ReadFull(r, code); err != nil {
			return 98
		}
		p := &fakeProgram{stdin: os.Stdin, replies: replies}
		if path != "-" {
			f, err := os.Open(path)
			if err != nil {
				return 97
			}
			p.stdin = f
		}
		p.run(string(code))
		v := 0
		if p.value != "" && mode == 's' {
			v = 1
		}
		fmt.Fprintf(replies, "done %d %d %d\n", p.status, v, v*len(p.value))
		if v == 1 {
			replies.WriteString(p.value)
		}
		if mode == 'o' {
			if p.linger {
				time.Sleep(time.Minute) // a teardown that takes its time
			}
			if p.after != "" {
				time.Sleep(50 * time.Millisecond) // a teardown's own time
				os.Stdout.WriteString(p.after)
			}
			return p.status
		}
	}
}

// fakeProgram is one program of the fake stub's language.
type fakeProgram struct {
	stdin, replies *os.File
	status         int
	value, after   string
	linger         bool
}

// run runs the program's lines.
func (p *fakeProgram) run(code string) {
	for line := range strings.Lines(code) {
		cmd, arg, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		switch cmd {
		case "out":
			os.Stdout.WriteString(arg + "\n")
		case "err":
			os.Stderr.WriteString(arg + "\n")
		case "cat":
			io.Copy(os.Stdout, p.stdin)
		case "status":
			p.status, _ = strconv.Atoi(arg)
		case "value":
			p.value = arg
		case "exit":
			n, _ := strconv.Atoi(arg)
			os.Exit(n)
		case "kill":
			sig := map[string]syscall.Signal{"TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL}[arg]
			syscall.Kill(os.Getpid(), sig)
			time.Sleep(time.Second)
		case "write":
			name, text, _ := strings.Cut(arg, " ")
			os.WriteFile(name, []byte(text), 0o644)
		case "symlink":
			target, name, _ := strings.Cut(arg, " ")
			os.Symlink(target, name)
		case "after":
			p.after += arg + "\n"
		case "linger":
			p.linger = true
		case "orphan":
			self, _ := os.Executable()
			attr := &os.ProcAttr{Files: []*os.File{nil, os.Stdout, os.Stderr}}
			child, err := os.StartProcess(self, []string{self, "fakechild", arg}, attr)
			if err == nil {
				child.Release()
			}
		case "burn":
			ms, _ := strconv.Atoi(arg)
			burn(time.Duration(ms) * time.Millisecond)
		case "waitint":
			p.waitInt()
		case "replies":
			p.replies.WriteString(arg + "\n")
		case "limits":
			p.limits()
		case "orphanburn":
			// A child that starts a grandchild and exits: the grandchild is
			// an orphan, the supervisor's to reap.
			self, _ := os.Executable()
			attr := &os.ProcAttr{Files: []*os.File{nil, os.Stdout, os.Stderr}}
			if child, err := os.StartProcess(self, []string{self, "fakechild", "spawnburn", arg}, attr); err == nil {
				child.Wait()
			}
		case "sleep":
			ms, _ := strconv.Atoi(arg)
			time.Sleep(time.Duration(ms) * time.Millisecond)
		case "big":
			n, _ := strconv.Atoi(arg)
			os.Stdout.Write(bytes.Repeat([]byte("x"), n))
		}
	}
}

// limits writes what the supervisor set on the stub, a "key=value" a line.
func (p *fakeProgram) limits() {
	var data, stack syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_DATA, &data)
	syscall.Getrlimit(syscall.RLIMIT_STACK, &stack)
	adj, _ := os.ReadFile("/proc/self/oom_score_adj")
	pgid, _ := syscall.Getpgid(0)
	fmt.Printf("data=%d\nstack=%d\nadj=%s\nleader=%v\nenv=%s\nfds=%s\n", data.Cur, stack.Cur,
		strings.TrimSpace(string(adj)), pgid == os.Getpid(), strings.Join(os.Environ(), ","), startFDs)
}

// startFDs are the descriptors the fake stub was started with.
var startFDs string

// openFDs lists the open descriptors of 0 to 63, by fstat, but the Go
// runtime's own.
func openFDs() string {
	open := ""
	for fd := range 64 {
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) != nil {
			continue
		}
		// Go's runtime reads its CPU quota from files it keeps open.
		if l, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); !strings.HasPrefix(l, "/sys/fs/cgroup/") {
			open += strconv.Itoa(fd)
		}
	}
	return open
}

// waitInt waits for SIGINT, the session call's interrupt.
func (p *fakeProgram) waitInt() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT)
	defer signal.Stop(ch)
	os.Stdout.WriteString("waiting\n") // the interrupt may come now
	select {
	case <-ch:
		p.status = 130
	case <-time.After(10 * time.Second):
	}
}

// burn spins for d of CPU time.
func burn(d time.Duration) {
	var ru syscall.Rusage
	for {
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		if time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) >= d {
			return
		}
		for i := 0; i < 1e6; i++ {
		}
	}
}

// fakeChild writes its text on 1 after 200 ms: output a call left behind;
// or, as "spawnburn MS", starts itself as "burn MS" and exits at once; or
// spins for MS milliseconds as "burn MS".
func fakeChild(args []string) int {
	switch args[0] {
	case "spawnburn":
		self, _ := os.Executable()
		child, err := os.StartProcess(self, []string{self, "fakechild", "burn", args[1]}, &os.ProcAttr{})
		if err != nil {
			return 1
		}
		child.Release()
		return 0
	case "burn":
		ms, _ := strconv.Atoi(args[1])
		burn(time.Duration(ms) * time.Millisecond)
		return 0
	}
	time.Sleep(200 * time.Millisecond)
	os.Stdout.WriteString(args[0] + "\n")
	return 0
}
