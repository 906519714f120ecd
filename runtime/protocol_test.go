package runtime

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/internal/runnerproto"
)

// testProtocol is a protocol with a known token.
func testProtocol() *protocol {
	p := newProtocol(testMaxFiles, testMaxFilesBytes)
	token := strings.Repeat("ab", runnerproto.TokenBytes)
	p.token = token
	p.prefix = []byte(runnerproto.Magic + token + ":")
	p.ack = []byte(runnerproto.Magic + token + ":go\n")
	return p
}

// The caps of testProtocol, the service's defaults.
const (
	testMaxFiles      = 16
	testMaxFilesBytes = 8 << 20
)

// marker is the end marker of p with the status, no usage and no files.
func marker(p *protocol, status int) string {
	return fmt.Sprintf("%s%03d %010d %010d %010d 0\n", p.prefix, status, 0, 0, 0)
}

func TestProtocolToken(t *testing.T) {
	a, b := newProtocol(2, 100), newProtocol(2, 100)
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(a.token) || a.token == b.token {
		t.Errorf("tokens %q and %q: want 32 random hex digits each", a.token, b.token)
	}
	files := []sandboxd.File{{Name: "d/a.csv", Content: []byte("x,y\n")}, {Name: "e", Content: nil}}
	if got, want := string(a.message("python", "print(1)\n", "in", files)), a.token+" 9 2 2 24 2 100 python\nprint(1)\nin"+
		"c 7 4\nd/a.csvx,y\nc 1 0\ne"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	if got, want := string(a.ack), "\x00sandboxd:"+a.token+":go\n"; got != want {
		t.Errorf("ack = %q, want %q", got, want)
	}
	if a.markerLen() != len(marker(a, 0)) {
		t.Errorf("markerLen = %d, want %d", a.markerLen(), len(marker(a, 0)))
	}
}

func TestDemuxProtocol(t *testing.T) {
	p := testProtocol()
	ack, end := string(p.ack), marker(p, 0)
	fake := strings.Replace(end, "abab", "abac", 1) // another token
	tests := []struct {
		name           string
		in             []byte
		max            int
		ended          bool
		status         int
		acked          bool
		stdout, stderr string
		truncated      bool
	}{
		{
			name: "hello world", max: 100, ended: true, acked: true, stdout: "hello\n",
			in: frames(frame(1, ack), frame(1, "hello\n"), frame(1, end), frame(2, end)),
		},
		{
			name: "ack, output and marker in one frame", max: 100, ended: true, status: 3, acked: true, stdout: "a", stderr: "b",
			in: frames(frame(1, ack+"a"+marker(p, 3)), frame(2, "b"+marker(p, 3))),
		},
		{
			name: "output without a final newline", max: 100, ended: true, acked: true, stdout: "no newline", stderr: "err",
			in: frames(frame(1, ack), frame(2, "err"), frame(1, "no newline"), frame(2, end), frame(1, end)),
		},
		{
			name: "exit status 255", max: 100, ended: true, status: 255, acked: true,
			in: frames(frame(1, ack), frame(1, marker(p, 255)), frame(2, marker(p, 255))),
		},
		{
			name: "a status over 255 is no marker", max: 100, acked: true,
			stdout: marker(p, 256), stderr: marker(p, 256),
			in: frames(frame(1, ack), frame(1, marker(p, 256)), frame(2, marker(p, 256))),
		},
		{
			name: "marker on stdout only: not ended, still stripped", max: 100, acked: true, stdout: "x\n",
			in: frames(frame(1, ack), frame(1, "x\n"), frame(1, end)),
		},
		{
			name: "statuses differ", max: 100, acked: true,
			in: frames(frame(1, ack), frame(1, marker(p, 1)), frame(2, marker(p, 2))),
		},
		{
			name: "another token is output", max: 200, acked: true, stdout: "x" + fake, stderr: fake,
			in: frames(frame(1, ack), frame(1, "x"+fake), frame(2, fake)),
		},
		{
			name: "marker not at the end is output", max: 200, acked: true, stdout: end + "more\n",
			in: frames(frame(1, ack), frame(1, end), frame(1, "more\n"), frame(2, end)),
		},
		{
			name: "no ack: markers are not believed", max: 200, stdout: "early\n" + ack,
			in: frames(frame(1, "early\n"+ack), frame(1, end), frame(2, end)),
		},
		{
			name: "a partial ack is output", max: 200, stdout: ack[:12] + "x",
			in: frames(frame(1, ack[:12]), frame(1, "x")),
		},
		{
			name: "exactly the cap, then the marker", max: 10, ended: true, acked: true, stdout: "0123456789", stderr: "abcdefghij",
			in: frames(frame(1, ack), frame(1, "0123456789"+end), frame(2, "abcdefghij"), frame(2, end)),
		},
		{
			name: "a byte over the cap, then the marker", max: 10, acked: true, truncated: true, stdout: "0123456789",
			in: frames(frame(1, ack), frame(1, "0123456789X"), frame(1, end), frame(2, end)),
		},
		{
			name: "over the cap with what looks like a marker's start", max: 10, acked: true, truncated: true, stdout: "0123456789",
			in: frames(frame(1, ack), frame(1, "0123456789"+end[:20]), frame(1, end), frame(2, end)),
		},
		{
			name: "over the cap, stream ends inside a marker-like tail", max: 10, acked: true, truncated: true, stdout: "0123456789",
			in: frames(frame(1, ack), frame(1, "0123456789"+end[:20])),
		},
		{
			name: "empty stream", max: 10,
		},
	}
	for _, tt := range tests {
		wholeAndByteByByte(t, tt.name, tt.in, func(t *testing.T, r io.Reader) {
			o := newOutput(tt.max, p)
			caps := 0
			if err := demux(r, o, func() { caps++ }); err != nil {
				t.Fatalf("demux: %v", err)
			}
			rep, ended := o.ended()
			if status := rep.Status; ended != tt.ended || status != tt.status || o.acked() != tt.acked {
				t.Errorf("ended %v status %d acked %v, want %v %d %v", ended, status, o.acked(), tt.ended, tt.status, tt.acked)
			}
			if (caps > 0) != o.truncated() {
				t.Errorf("onCap called %d times while truncated is %v", caps, o.truncated())
			}
			o.finish()
			if string(o.stdout.buf) != tt.stdout || string(o.stderr.buf) != tt.stderr {
				t.Errorf("stdout %q stderr %q, want %q %q", o.stdout.buf, o.stderr.buf, tt.stdout, tt.stderr)
			}
			if o.truncated() != tt.truncated {
				t.Errorf("truncated %v, want %v", o.truncated(), tt.truncated)
			}
		})
	}
}

func TestDemuxAnswersAtTheMarker(t *testing.T) {
	// The end marker ends reading although the connection stays open: the
	// pipe below is never closed.
	p := testProtocol()
	pr, pw := io.Pipe()
	defer pr.Close()
	go func() {
		_, _ = pw.Write(frames(frame(1, string(p.ack)+"hi\n"+marker(p, 7)), frame(2, marker(p, 7))))
	}()
	o := newOutput(100, p)
	done := make(chan error, 1)
	go func() { done <- demux(pr, o, func() {}) }()
	select {
	case err := <-done:
		if rep, ok := o.ended(); err != nil || !ok || rep.Status != 7 {
			t.Errorf("demux = %v, ended %v status %d; want nil, true, 7", err, ok, rep.Status)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("demux did not return at the end marker")
	}
}

func TestEndReportCarriesUsage(t *testing.T) {
	p := testProtocol()
	in := fmt.Sprintf("out%s%03d %010d %010d %010d 1\n", p.prefix, 3, 1234, 51300, 777)
	rep, ok := p.endReport([]byte(in))
	if want := (runnerproto.EndReport{Status: 3, CPUMS: 1234, MaxRSSKB: 51300, FilesLen: 777, FilesCut: true}); !ok || rep != want {
		t.Errorf("endReport = %+v, %v; want %+v", rep, ok, want)
	}
	// The shapes are runnerproto's (its tests); here, what the run adds:
	// the token and the files section's bound.
	for _, bad := range []string{
		fmt.Sprintf("%s%03d %010d %010d %010d 0\n", p.prefix, 3, 1234, 51300, p.filesBound()+1),    // section too long
		fmt.Sprintf("%s%03d %010d %010d %010d 0\n", newProtocol(2, 100).prefix, 3, 1234, 51300, 0), // another token
	} {
		if rep, ok := p.endReport([]byte(bad)); ok {
			t.Errorf("endReport(%q) = %+v, want no marker", bad, rep)
		}
	}
}

func TestCapBufferHoldsAtMostAMarkerPastTheCap(t *testing.T) {
	p := testProtocol()
	b := capBuffer{max: 100, proto: p}
	b.write([]byte(strings.Repeat("z", 100)))
	b.write(p.prefix) // could still be the marker
	if b.truncated || len(b.buf) != 100+len(p.prefix) {
		t.Fatalf("truncated %v with %d bytes; want a possible marker held", b.truncated, len(b.buf))
	}
	b.write([]byte("1234\n")) // it is not
	if !b.truncated || len(b.buf) != 100 || cap(b.buf) > 100+p.markerLen() {
		t.Errorf("truncated %v, %d bytes in a buffer of %d; want true, 100, at most %d", b.truncated, len(b.buf), cap(b.buf), 100+p.markerLen())
	}
}

// TestHeaderLanguage pins what a header may carry: a canonical name, python
// for a job that names none; anything else never reaches a header.
func TestHeaderLanguage(t *testing.T) {
	for in, want := range map[string]string{"": "python", "python": "python", "javascript": "javascript",
		"typescript": "typescript", "bash": "bash"} {
		if got, err := headerLanguage("runtime.run", in); err != nil || got != want {
			t.Errorf("headerLanguage(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"Python", "python3", "js", " bash", "ruby", "python 1 2", "python\n", "\x00"} {
		if got, err := headerLanguage("runtime.run", bad); sandboxd.ErrorCode(err) != sandboxd.CodeInvalid {
			t.Errorf("headerLanguage(%q) = %q, %v; want CodeInvalid", bad, got, err)
		}
	}
}

// TestSessionCallLanguage pins that a call runs in its session's language:
// one that names none or the same is taken, another is CodeInvalid.
func TestSessionCallLanguage(t *testing.T) {
	s := &Session{language: sandboxd.LanguagePython}
	for _, ok := range []string{"", "python"} {
		if err := s.checkLanguage(sandboxd.Job{Language: ok}); err != nil {
			t.Errorf("checkLanguage(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"javascript", "bash", "py"} {
		if err := s.checkLanguage(sandboxd.Job{Language: bad}); sandboxd.ErrorCode(err) != sandboxd.CodeInvalid {
			t.Errorf("checkLanguage(%q) = %v, want CodeInvalid", bad, err)
		}
	}
}
