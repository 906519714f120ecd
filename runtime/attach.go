package runtime

import (
	"context"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
)

// stream is one container's link to its runner (link.go: the attach
// connection, or the runner's own sockets): the program goes in on stdin,
// its stdout and stderr come out as frames, demultiplexed into capped
// buffers by a goroutine that reads from the container's start until the
// stream ends or the runner reports the program's end.
//
// The connection must be read or closed: dockerd 20.10 copies the program's
// output into it synchronously, so a connection nobody reads stalls that
// copy, the container never reaches "exited", and even a forced remove hangs.
// Hence every way of no longer reading (cap, deadline, cancel, the end
// marker) ends in close; after a cap is hit, reading goes on (discarding the
// flood) only until the kill has gone through.
type stream struct {
	link link
	out  *output
	// capHit is closed when stdout or stderr first passes its cap.
	capHit chan struct{}
	// done is closed when reading ends; err then says why (nil at a clean
	// end of stream or at the end marker, else a read error).
	done      chan struct{}
	err       error
	closeOnce sync.Once
}

// attach opens the attach connection of a created container. It must happen
// before start, so no output is lost and stdin is ready for the program.
func (d *Docker) attach(ctx context.Context, id string, proto *protocol) (*stream, error) {
	hj, err := d.cli.ContainerAttach(ctx, id, container.AttachOptions{
		Stream: true,
		Stdin:  true,
		Stdout: true,
		Stderr: true,
	})
	if err != nil {
		return nil, err
	}
	return newStream(attachLink{hj}, int(d.cfg.MaxOutputBytes), proto), nil
}

// newStream returns the stream over l, its output capped at max bytes per
// stream.
func newStream(l link, max int, proto *protocol) *stream {
	out := newOutput(max, proto)
	out.ackC = make(chan bool, 1)
	return &stream{
		link:   l,
		out:    out,
		capHit: make(chan struct{}),
		done:   make(chan struct{}),
	}
}

// read starts reading the output on its own goroutine.
func (s *stream) read() {
	go func() {
		defer close(s.done)
		s.err = demux(s.link, s.out, func() { close(s.capHit) })
	}()
}

// send hands the runner its message. Writing runs on its own goroutine so a
// program that prints before it has read all of stdin cannot deadlock
// against us; closing the write side is the program's EOF.
func (s *stream) send(msg []byte) {
	go func() {
		// An error here means the program ended (or we closed) before it
		// read everything; its outcome says all there is to say.
		if _, err := s.link.Write(msg); err == nil {
			_ = s.link.CloseWrite()
		}
	}()
}

// ended reports whether reading has ended, for whatever reason.
func (s *stream) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// drain lets reading go on until at most until, then ends it: after a
// kill, what the program printed before it died is still wanted, but an end
// of stream is not waited for forever.
func (s *stream) drain(until time.Time) {
	_ = s.link.SetReadDeadline(until)
}

// close ends the connection, both ways; reading and writing stop at once.
// It is safe to call more than once.
func (s *stream) close() {
	s.closeOnce.Do(func() { _ = s.link.Close() })
}
