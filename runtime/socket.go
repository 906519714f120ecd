package runtime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/mount"
)

// The runner's own sockets (the socket link). The service listens on a Unix
// socket in a directory of the container's own, which the container sees
// read-only at ioMountDir; the runner (images/python/run.py) connects to it
// twice as it starts, before it imports anything, and makes the first
// connection its stdin and stdout, the second its stderr. The program's
// bytes then go between the service and the runner through the kernel
// alone. Through the attach connection each byte is copied twice more each
// way, by dockerd and by the container's shim: two more processes to wake,
// which on a busy host wait for a core behind the starts and removals
// around them (BENCHMARKS.md, 2026-12-05, the socket link). The listener is
// closed, and its socket removed, once both connections are in, before the
// container can have a program; the directory goes with the link.
//
// The link needs a daemon that mounts the service's own directories (one
// on this host, over a Unix socket) and runc: gVisor connects to a host's
// socket only when registered with --host-uds, so runsc keeps the attach
// connection (Config.IODir).
const (
	// ioMountDir is where the container sees its socket's directory.
	ioMountDir = "/run/sandboxd"
	// ioSocket is the socket's name in it.
	ioSocket = "io"
	// ioEnv hands the runner the socket's path; it removes it before the
	// program runs.
	ioEnv = "SANDBOX_IO"
)

// socketLink is a link over the runner's two connections. Its frames are
// made here: each read from a connection becomes one stdcopy frame of its
// stream, written whole into a synchronous in-memory pipe whose other end
// is read, so what reads a link never knows which one it reads.
type socketLink struct {
	dir string
	ln  *net.UnixListener
	// ready is closed once both connections are in (in, errs) or accepting
	// ended without them (err).
	ready    chan struct{}
	err      error
	in, errs *net.UnixConn
	// rd is read; the copiers write frames into wr.
	rd, wr    net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

var _ link = (*socketLink)(nil)

// newSocketLink makes a socket in a new directory under base and starts
// accepting the runner's connections on it.
func newSocketLink(base string) (*socketLink, error) {
	if err := socketBase(base); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(base, "io-")
	if err != nil {
		return nil, fmt.Errorf("runtime: a runner's socket directory: %w", err)
	}
	path := filepath.Join(dir, ioSocket)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err == nil {
		// The container's own user connects: the directory must be open to
		// it and the socket writable (only this container sees either).
		err = errors.Join(os.Chmod(dir, 0o755), os.Chmod(path, 0o666))
		if err != nil {
			ln.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("runtime: a runner's socket: %w", err)
	}
	rd, wr := net.Pipe()
	l := &socketLink{dir: dir, ln: ln, ready: make(chan struct{}), rd: rd, wr: wr, closed: make(chan struct{})}
	go l.accept()
	return l, nil
}

// socketBase makes base, the directory of the runners' socket directories,
// when missing, and checks it: in a shared temporary directory someone else
// may have made it first, or put a link there, so it must be this user's
// own directory, closed to everyone else.
func socketBase(base string) error {
	if err := os.MkdirAll(base, 0o700); err != nil {
		return fmt.Errorf("runtime: the runners' socket directory (runtime.io_dir): %w", err)
	}
	if fi, err := os.Lstat(base); err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || !ownedByMe(fi) {
		return fmt.Errorf("runtime: the runners' socket directory (runtime.io_dir) %s must be a directory of this user's, mode 700", base)
	}
	return nil
}

// ownedByMe reports whether fi is owned by this process's user.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// mount is the container's view of the link's directory.
func (l *socketLink) mount() mount.Mount {
	return mount.Mount{Type: mount.TypeBind, Source: l.dir, Target: ioMountDir, ReadOnly: true}
}

// accept takes the runner's two connections, in the order it makes them,
// and then closes the listener, which removes the socket. A link closed
// first, or whose container stopped first (stopWith), gets none: reading
// it ends at once, and writing to it fails.
func (l *socketLink) accept() {
	var conns []*net.UnixConn
	var err error
	for len(conns) < 2 {
		c, e := l.ln.AcceptUnix()
		if e != nil {
			err = e
			break
		}
		conns = append(conns, c)
	}
	l.ln.Close()
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
		l.err = fmt.Errorf("runtime: the runner did not connect: %w", err)
		close(l.ready)
		l.wr.Close()
		return
	}
	l.in, l.errs = conns[0], conns[1]
	close(l.ready)
	go l.copyFrames()
}

// stopWith stops waiting for the runner once stopped is closed (its
// container has exited).
func (l *socketLink) stopWith(stopped <-chan struct{}) {
	go func() {
		select {
		case <-stopped:
			l.ln.Close()
		case <-l.ready:
		case <-l.closed:
		}
	}()
}

// copyFrames turns what each connection reads into frames of its stream,
// until both have ended; then the pipe ends, as the attach stream does
// once the container's output has.
func (l *socketLink) copyFrames() {
	var wg sync.WaitGroup
	for i, c := range []*net.UnixConn{l.in, l.errs} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, frameHeaderSize+readChunk)
			buf[0] = byte(streamStdout + i)
			for {
				n, err := c.Read(buf[frameHeaderSize:])
				if n > 0 {
					binary.BigEndian.PutUint32(buf[4:frameHeaderSize], uint32(n))
					// One Write is one frame: the pipe never mixes two.
					if _, werr := l.wr.Write(buf[:frameHeaderSize+n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	l.wr.Close()
}

// wait waits for the runner's connections.
func (l *socketLink) wait() error {
	select {
	case <-l.ready:
		return l.err
	case <-l.closed:
		return net.ErrClosed
	}
}

// Read reads frames.
func (l *socketLink) Read(p []byte) (int, error) { return l.rd.Read(p) }

// Write writes to the runner's stdin, once it has connected.
func (l *socketLink) Write(p []byte) (int, error) {
	if err := l.wait(); err != nil {
		return 0, err
	}
	return l.in.Write(p)
}

// CloseWrite ends the runner's stdin.
func (l *socketLink) CloseWrite() error {
	if err := l.wait(); err != nil {
		return err
	}
	return l.in.CloseWrite()
}

// SetReadDeadline bounds the reads of frames.
func (l *socketLink) SetReadDeadline(t time.Time) error { return l.rd.SetReadDeadline(t) }

// Close ends the link both ways and removes its directory.
func (l *socketLink) Close() error {
	l.closeOnce.Do(func() {
		close(l.closed)
		l.ln.Close()
		<-l.ready // at once: the listener is closed
		if l.in != nil {
			l.in.Close()
			l.errs.Close()
		}
		l.rd.Close()
		l.wr.Close()
		os.RemoveAll(l.dir)
	})
	return nil
}
