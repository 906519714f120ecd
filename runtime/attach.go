package runtime

import (
	"context"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
)

// stream is one run's attach connection: the code goes in on stdin, the
// program's stdout and stderr come out as frames, demultiplexed into capped
// buffers by a goroutine.
//
// The connection must be read or closed: dockerd 20.10 copies the program's
// output into it synchronously, so a connection nobody reads stalls that
// copy, the container never reaches "exited", and even a forced remove hangs.
// Hence every way of no longer reading (cap, deadline, cancel) ends in close;
// after a cap is hit, reading goes on (discarding the flood) only until the
// kill has gone through.
type stream struct {
	hj     types.HijackedResponse
	stdout capBuffer
	stderr capBuffer
	// capHit is closed when stdout or stderr first passes its cap.
	capHit chan struct{}
	// done is closed when reading ends; err then says why (nil at a clean
	// end of stream, else a read error).
	done      chan struct{}
	err       error
	closeOnce sync.Once
}

// attach opens the attach connection of a created container. It must happen
// before start, so no output is lost and stdin is ready for the code.
func (d *Docker) attach(ctx context.Context, id string) (*stream, error) {
	hj, err := d.cli.ContainerAttach(ctx, id, container.AttachOptions{
		Stream: true,
		Stdin:  true,
		Stdout: true,
		Stderr: true,
	})
	if err != nil {
		return nil, err
	}
	limit := d.cfg.MaxOutputBytes
	return &stream{
		hj:     hj,
		stdout: capBuffer{max: limit},
		stderr: capBuffer{max: limit},
		capHit: make(chan struct{}),
		done:   make(chan struct{}),
	}, nil
}

// start hands the code over and begins reading. Writing runs on its own
// goroutine so a program that prints before it has read all of stdin cannot
// deadlock against us; closing the write side is the program's EOF.
func (s *stream) start(code string) {
	go func() {
		// An error here means the program ended (or we closed) before it
		// read everything; its outcome says all there is to say.
		if _, err := s.hj.Conn.Write([]byte(code)); err == nil {
			_ = s.hj.CloseWrite()
		}
	}()
	go func() {
		defer close(s.done)
		s.err = demux(s.hj.Reader, &s.stdout, &s.stderr, func() { close(s.capHit) })
	}()
}

// drain lets reading go on for at most grace more, then ends it: after a
// kill, what the program printed before it died is still wanted, but an end
// of stream is not waited for forever.
func (s *stream) drain(grace time.Duration) {
	_ = s.hj.Conn.SetReadDeadline(time.Now().Add(grace))
}

// close ends the connection, both ways; reading and writing stop at once.
// It is safe to call more than once.
func (s *stream) close() {
	s.closeOnce.Do(s.hj.Close)
}
