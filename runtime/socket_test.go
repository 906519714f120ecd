package runtime

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/mount"

	"sandboxd"
)

// fakeRunner connects to l's socket as run.py does: twice, the first
// connection its stdin and stdout, the second its stderr.
func fakeRunner(t *testing.T, l *socketLink) (in, errs *net.UnixConn) {
	t.Helper()
	path := filepath.Join(l.dir, ioSocket)
	var conns []*net.UnixConn
	for range 2 {
		c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	return conns[0], conns[1]
}

func newTestLink(t *testing.T) *socketLink {
	t.Helper()
	l, err := newSocketLink(filepath.Join(t.TempDir(), "io"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// The program goes in on the first connection, ending with its EOF; what
// the runner writes on each comes out as its stream's frames, read by the
// same demux as the attach connection's, up to the end marker.
func TestSocketLinkCarriesTheProtocol(t *testing.T) {
	l := newTestLink(t)
	if fi, err := os.Stat(filepath.Join(l.dir, ioSocket)); err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket: %v, %v; want a socket any user in the container may connect to", fi, err)
	}
	in, errs := fakeRunner(t, l)
	proto := newProtocol(0, 0)
	s := newStream(l, 1<<10, proto)
	s.read()
	s.send([]byte("the program"))
	got, err := io.ReadAll(in)
	if err != nil || string(got) != "the program" {
		t.Fatalf("the runner read %q, %v; want the program, then EOF", got, err)
	}
	// Both connections are in: the socket is gone, no one else connects.
	if _, err := os.Stat(filepath.Join(l.dir, ioSocket)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is still there after the runner connected: %v", err)
	}
	report := append(append([]byte{}, proto.prefix...), "000 0000000001 0000000002 0000000000 0\n"...)
	mustWrite(t, in, append(append([]byte{}, proto.ack...), "out\n"...))
	mustWrite(t, errs, []byte("err\n"))
	mustWrite(t, in, report)
	mustWrite(t, errs, report)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading did not end at the end marker")
	}
	if s.err != nil {
		t.Fatalf("demux: %v", s.err)
	}
	if _, ok := s.out.ended(); !ok || !s.out.acked() {
		t.Errorf("acked %v, ended %v; want both", s.out.acked(), ok)
	}
	s.out.finish()
	if string(s.out.stdout.buf) != "out\n" || string(s.out.stderr.buf) != "err\n" {
		t.Errorf("stdout %q, stderr %q; want out and err", s.out.stdout.buf, s.out.stderr.buf)
	}
	s.close()
	if _, err := os.Stat(l.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's directory is left after close: %v", err)
	}
}

func mustWrite(t *testing.T, c net.Conn, p []byte) {
	t.Helper()
	if _, err := c.Write(p); err != nil {
		t.Fatal(err)
	}
}

// A container that stops before its runner connected ends the link: reads
// end at once and writes fail, so a run waits for nothing.
func TestSocketLinkEndsWhenTheContainerStopsFirst(t *testing.T) {
	l := newTestLink(t)
	stopped := make(chan struct{})
	l.stopWith(stopped)
	close(stopped)
	read := make(chan error, 1)
	go func() {
		_, err := l.Read(make([]byte, 8))
		read <- err
	}()
	select {
	case err := <-read:
		if err != io.EOF {
			t.Errorf("read: %v, want EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a read waits for a runner that never connects")
	}
	if _, err := l.Write([]byte("x")); err == nil {
		t.Error("a write to a runner that never connected succeeded")
	}
}

// Closed before the runner connected: the same, and the directory goes.
func TestSocketLinkClosedBeforeTheRunner(t *testing.T) {
	l := newTestLink(t)
	l.Close()
	if _, err := l.Write([]byte("x")); err == nil {
		t.Error("a write after close succeeded")
	}
	if _, err := os.Stat(l.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory is left after close: %v", err)
	}
}

// A read deadline ends a read, and reading resumes once it is lifted: a
// session takes a warm box's stream over this way (switchBox).
func TestSocketLinkDeadlineResumes(t *testing.T) {
	l := newTestLink(t)
	in, _ := fakeRunner(t, l)
	_ = l.SetReadDeadline(time.Now())
	if _, err := l.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
	_ = l.SetReadDeadline(time.Time{})
	mustWrite(t, in, []byte("hi"))
	frame := make([]byte, frameHeaderSize+2)
	if _, err := io.ReadFull(l, frame); err != nil || frame[0] != streamStdout || string(frame[frameHeaderSize:]) != "hi" {
		t.Fatalf("frame %q, %v; want stdout's \"hi\"", frame, err)
	}
}

// The socket link is used with runc on a local daemon, unless turned off;
// runsc and a daemon over TCP keep the attach connection.
func TestIOBase(t *testing.T) {
	def := filepath.Join(os.TempDir(), fmt.Sprintf("sandboxd-io-%d", os.Getuid()))
	for _, c := range []struct {
		dir, oci, host, want string
	}{
		{"", "", "unix:///var/run/docker.sock", def},
		{"", "runc", "unix:///var/run/docker.sock", def},
		{"/srv/io", "runc", "unix:///var/run/docker.sock", "/srv/io"},
		{"off", "runc", "unix:///var/run/docker.sock", ""},
		{"", "runsc", "unix:///var/run/docker.sock", ""},
		{"", "crun", "unix:///var/run/docker.sock", ""},
		{"", "runc", "tcp://10.0.0.2:2376", ""},
	} {
		if got := ioBase(Config{IODir: c.dir, OCIRuntime: c.oci}, c.host); got != c.want {
			t.Errorf("io_dir %q, %q, %q: %q, want %q", c.dir, c.oci, c.host, got, c.want)
		}
	}
}

// The container sees the link's directory read-only, gets the socket's
// path, and has nothing attached.
func TestSpecUseSocket(t *testing.T) {
	l := newTestLink(t)
	sp := newSpec(testConfig(), sandboxd.Job{ID: "job-1"})
	sp.useSocket(l)
	c := sp.config
	equal(t, "Mounts", sp.host.Mounts, []mount.Mount{{Type: mount.TypeBind, Source: l.dir, Target: "/run/sandboxd", ReadOnly: true}})
	equal(t, "Env", c.Env, []string{"SANDBOX_DATA_LIMIT=100663296", "SANDBOX_IO=/run/sandboxd/io"})
	equal(t, "stdin and attach flags", []bool{c.OpenStdin, c.StdinOnce, c.AttachStdin, c.AttachStdout, c.AttachStderr, c.Tty},
		[]bool{false, false, false, false, false, false})
}

// Reap removes the socket directories a crashed service left, not those of
// the links in use.
func TestReapSocketDirs(t *testing.T) {
	base := filepath.Join(t.TempDir(), "io")
	d := &Docker{ioBase: base, log: slog.New(slog.DiscardHandler)}
	old, err := newSocketLink(base)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	stale := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old.dir, stale, stale); err != nil {
		t.Fatal(err)
	}
	cur, err := newSocketLink(base)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	d.reapSocketDirs(time.Now().Add(-staleSocketDir))
	if _, err := os.Stat(old.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stale directory is left: %v", err)
	}
	if _, err := os.Stat(cur.dir); err != nil {
		t.Errorf("a live link's directory was removed: %v", err)
	}
}

// A socket directory someone else could reach is refused: the sockets
// must be the service's alone.
func TestSocketLinkRefusesAnOpenBase(t *testing.T) {
	base := filepath.Join(t.TempDir(), "io")
	if err := os.Mkdir(base, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o777); err != nil {
		t.Fatal(err)
	}
	if l, err := newSocketLink(base); err == nil {
		l.Close()
		t.Fatal("a socket made in a directory anyone may write")
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	if l, err := newSocketLink(link); err == nil {
		l.Close()
		t.Fatal("a socket made through a symbolic link")
	}
}
