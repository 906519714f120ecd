package supervisor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"sandboxd/internal/runnerproto"
)

// fakeStubs is a table of fake stubs: "warm" (kept warm), "other" (warm,
// another process), "direct" (started for its one-shot), "noready" and
// "dies".
func fakeStubs() map[string]Stub {
	fake := func(mode string) func(Limits, bool) []string {
		// Every argv is the same fake, whatever the limits.
		return func(Limits, bool) []string {
			self, _ := os.Executable()
			return []string{self, "fakestub", mode}
		}
	}
	return map[string]Stub{
		"warm":   {Name: "warm", Argv: fake("warm"), Warm: true, Env: []string{"STUB=1"}, Stack: 2 << 20},
		"alias":  {Name: "warm", Argv: fake("warm"), Warm: true},
		"other":  {Name: "other", Argv: fake("warm"), Warm: true},
		"direct": {Name: "direct", Argv: fake("direct")},
		"shell": {Name: "shell", Argv: fake("shell"), Request: func(code []byte, stdin string, _ int) []byte {
			return fmt.Appendf(nil, "run s %d %s\n", len(code), stdin)
		}},
		"noready": {Name: "noready", Argv: fake("noready"), Warm: true},
		"dies":    {Name: "dies", Argv: fake("dies"), Warm: true},
	}
}

// host drives a supervisor over pipes as the service would.
type host struct {
	t      *testing.T
	in     *os.File
	out    *buffer
	errs   *buffer
	code   chan int
	cancel context.CancelFunc
	root   string
	shm    string
	// interrupt sends the service's SIGINT.
	interrupt func()
}

// buffer collects what a stream carries.
type buffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	eof chan struct{}
}

// bytes returns what came so far.
func (b *buffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.b.Bytes())
}

// mustHost starts a supervisor of the fake stubs for the languages.
func mustHost(t *testing.T, languages ...string) *host {
	t.Helper()
	return mustHostWith(t, nil, languages...)
}

// mustHostWith is mustHost with a change to the supervisor before it runs.
func mustHostWith(t *testing.T, change func(*Supervisor), languages ...string) *host {
	t.Helper()
	inR, inW := mustPipe(t)
	outR, outW := mustPipe(t)
	errR, errW := mustPipe(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &host{t: t, in: inW, out: collectStream(outR), errs: collectStream(errR), code: make(chan int, 1),
		cancel: cancel, root: t.TempDir(), shm: t.TempDir()}
	s := &Supervisor{
		Link: Link{In: inR, Out: outW, Err: errW}, Stubs: fakeStubs(), Languages: languages,
		Self: self, Env: []string{"HOME=/tmp", "LANG=C.UTF-8", "PATH=/usr/bin:/bin"},
		Root: h.root, Shm: h.shm, Proc: "/proc",
	}
	interrupts := make(chan os.Signal, 1)
	s.Interrupts = interrupts
	if change != nil {
		change(s)
	}
	go func() {
		h.code <- s.Run(ctx)
		outW.Close()
		errW.Close()
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		select {
		case <-h.code:
		case <-time.After(10 * time.Second):
			t.Error("the supervisor did not end")
		}
	})
	// As signal.Notify does, an interrupt is dropped while one is pending.
	h.interrupt = func() {
		select {
		case interrupts <- os.Interrupt:
		default:
		}
	}
	return h
}

// mustPipe returns a pipe, closed at the test's end.
func mustPipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// collectStream reads r into a buffer until its end.
func collectStream(r io.Reader) *buffer {
	b := &buffer{eof: make(chan struct{})}
	go func() {
		defer close(b.eof)
		var chunk [4096]byte
		for {
			n, err := r.Read(chunk[:])
			b.mu.Lock()
			b.b.Write(chunk[:n])
			b.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return b
}

// token returns a token of its own for each call of a test.
func token(i int) string { return fmt.Sprintf("%0*x", 2*runnerproto.TokenBytes, i+0xa1) }

// program is a program or a call as the host sends it.
type program struct {
	token, lang, code, stdin string
	files                    []runnerproto.Record
	maxFiles, maxBytes       int64
}

// send writes the program on the link.
func (h *host) send(p program) {
	h.t.Helper()
	var files []byte
	for _, f := range p.files {
		files = runnerproto.AppendRecord(files, runnerproto.KindContent, f.Name, int64(len(f.Content)))
		files = append(files, f.Content...)
	}
	if p.maxFiles == 0 {
		p.maxFiles, p.maxBytes = 10, 1<<20
	}
	hd := runnerproto.Header{Token: p.token, Code: int64(len(p.code)), Stdin: int64(len(p.stdin)),
		Files: int64(len(p.files)), FilesLen: int64(len(files)), MaxFiles: p.maxFiles,
		MaxFilesBytes: p.maxBytes, Language: p.lang}
	b := append(hd.Append(nil), p.code...)
	b = append(append(b, p.stdin...), files...)
	if _, err := h.in.Write(b); err != nil {
		h.t.Fatal(err)
	}
}

// exit waits for the supervisor's exit status.
func (h *host) exit() int {
	h.t.Helper()
	select {
	case code := <-h.code:
		h.code <- code
		<-h.out.eof
		<-h.errs.eof
		return code
	case <-time.After(20 * time.Second):
		h.t.Fatal("the supervisor did not end")
		return -1
	}
}

// answer is what a run's or call's stdout said after its ack.
type answer struct {
	ack    string
	output string
	report runnerproto.EndReport
	files  []runnerproto.Record
	value  string
	rest   string
}

// waitEnd waits until stdout holds the end of the run or call of tok from
// offset from on, and parses it; ok false when it does not come in time.
func (h *host) waitEnd(tok string, from int, session bool) (answer, bool) {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if a, ok := parseAnswer(h.t, h.out.bytes()[from:], tok, session); ok {
			return a, true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return answer{}, false
}

// parseAnswer parses an ack, output, an end marker, its files section and
// value out of b; ok false when b does not hold them all yet.
func parseAnswer(t *testing.T, b []byte, tok string, session bool) (answer, bool) {
	t.Helper()
	prefix := runnerproto.Magic + tok + ":"
	var a answer
	i := bytes.Index(b, []byte(prefix))
	if i < 0 {
		return a, false
	}
	nl := bytes.IndexByte(b[i:], '\n')
	if nl < 0 {
		return a, false
	}
	a.ack = string(b[i+len(prefix) : i+nl])
	b = b[i+nl+1:]
	j := bytes.Index(b, []byte(prefix))
	if j < 0 {
		return a, false
	}
	a.output = string(b[:j])
	nl = bytes.IndexByte(b[j:], '\n')
	if nl < 0 {
		return a, false
	}
	r, ok := runnerproto.ParseEndReport(b[j+len(prefix):j+nl+1], session)
	if !ok {
		t.Fatalf("malformed end marker %q", b[j:j+nl+1])
	}
	a.report = r
	b = b[j+nl+1:]
	if int64(len(b)) < r.FilesLen+r.ValueLen {
		return a, false
	}
	files, err := runnerproto.ParseRecords(b[:r.FilesLen], 1000)
	if err != nil {
		t.Fatalf("files section: %v", err)
	}
	a.files = files
	a.value = string(b[r.FilesLen : r.FilesLen+r.ValueLen])
	a.rest = string(b[r.FilesLen+r.ValueLen:])
	return a, true
}
