package runtime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The stages of one stream of a call, as the session's reader sees it.
const (
	// stageBefore: the call's ack has not come on this stream yet.
	stageBefore = iota
	// stageIn: the stream carries the call's output.
	stageIn
	// stageOver: the call's end marker (and on stdout its section and
	// value) has come; what follows is output between calls.
	stageOver
)

// call is what the session's reader needs of the call under way: its
// protocol and output, where each stream stands, and the signals to Run.
type call struct {
	proto *protocol
	out   *output
	seek  [2]ackSeek
	stage [2]int
	// acked is closed once the ack has come on stdout; done once both
	// streams are over; capHit once either passes its cap.
	acked, done, capHit chan struct{}
	capOnce             sync.Once
}

// newCall returns a call of the protocol, its output capped at max bytes
// per stream. A call of the loop's ack alone has only its stdout ack to
// wait for: its stderr is over from the start.
func newCall(proto *protocol, max int, ackOnly bool) *call {
	c := &call{proto: proto, out: newOutput(max, proto),
		acked: make(chan struct{}), done: make(chan struct{}), capHit: make(chan struct{})}
	c.out.ackC = make(chan bool, 1)
	for i := range c.seek {
		c.seek[i].ack = proto.ack
	}
	if ackOnly {
		c.stage[1] = stageOver
	}
	return c
}

// readLoop is the session's one reader: it reads the attach stream's frames
// for the session's life and hands each payload to deliver, until the
// stream ends (the container stopped, or the session closed it). The
// stream is always read, so dockerd's copy never stalls.
func (s *Session) readLoop() {
	defer close(s.readDone)
	r := s.b.s.link
	var hdr [frameHeaderSize]byte
	chunk := make([]byte, readChunk)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			s.readErr = err
			return
		}
		size := int(binary.BigEndian.Uint32(hdr[4:]))
		stream := int(hdr[0]) - streamStdout
		if hdr[0] != streamStdout && hdr[0] != streamStderr {
			s.readErr = fmt.Errorf("runtime: attach frame of stream %d in a session", hdr[0])
			return
		}
		for size > 0 {
			n, err := io.ReadFull(r, chunk[:min(size, len(chunk), s.room(stream))])
			s.deliver(stream, chunk[:n])
			size -= n
			if err != nil {
				s.readErr = unexpected(err)
				return
			}
			if s.overSent() {
				// The call sent more than sentBound: nothing more is read
				// (dockerd's copy waits) until the call's watch, told by
				// capHit, ends the session, which closes the stream.
				<-s.ended
				s.readErr = errOverSent
				return
			}
		}
	}
}

// errOverSent is why the reader stopped at a call that sent more than
// sentBound.
var errOverSent = errors.New("runtime: a session call sent more than its bound")

// room is the most the reader may read next from stream: up to one byte
// past the call's sentBound once the call's ack has come on stream (so the
// read that crosses it is the last), else a whole chunk (what comes
// between calls has its own cap, drainLocked).
func (s *Session) room(stream int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.cur; c != nil && c.stage[stream] != stageBefore {
		return c.out.room()
	}
	return readChunk
}

// overSent reports whether the call under way has sent more than its
// sentBound.
func (s *Session) overSent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur != nil && s.cur.out.overSent()
}

// deliver hands p, read from stream (0 stdout, 1 stderr), to the call under
// way, up to the byte where its part of the stream ends; the rest, and all
// of it between calls, is drained. The cap on all a run sends (sent.go)
// bounds each call as it bounds a run: every byte from the call's ack on,
// the output, the markers, the files section, the value and whatever
// follows one stream's end while the other's is still to come (a program
// that forged its end floods on), counts in the call's sent bytes; past
// sentBound the call is truncated and capped (output_limit, and the
// session ends). What comes before a stream's ack was written between
// calls, and counts against that cap instead (drainLocked).
func (s *Session) deliver(stream int, p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read += int64(len(p))
	c := s.cur
	if c == nil || c.stage == [2]int{stageOver, stageOver} {
		s.drainLocked(len(p))
		return
	}
	for len(p) > 0 {
		if c.stage[stream] == stageOver {
			c.out.sent += int64(len(p))
			p = nil
		} else {
			p = c.take(stream, p, s.drainLocked)
		}
		if c.out.truncated() {
			c.capOnce.Do(func() { close(c.capHit) })
		}
	}
}

// take hands the call what p holds of its part of stream and returns the
// rest; bytes before the ack go to drop. What it hands over counts in the
// call's sent bytes (sent.go), as a one-shot run's are counted: the stdout
// ack, the output, the markers, the files section and the value.
func (c *call) take(stream int, p []byte, drop func(int)) []byte {
	switch c.stage[stream] {
	case stageBefore:
		dropped, rest, found := c.seek[stream].scan(p)
		drop(dropped)
		if !found {
			return nil
		}
		c.stage[stream] = stageIn
		if stream == 0 {
			c.out.sent += int64(len(c.proto.ack))
			c.out.writeStdout(c.proto.ack)
			close(c.acked)
		}
		if c.stage[1-stream] == stageOver && c.stage[stream] == stageIn && c.ackOnly() {
			c.over(stream)
		}
		return rest
	case stageIn:
		rest := c.takeOutput(stream, p)
		c.out.sent += int64(len(p) - len(rest))
		return rest
	}
	return p
}

// takeOutput hands the call what p holds of its output on stream, up to
// the stream's end (its marker, and on stdout the section and value after
// it), and returns the rest.
func (c *call) takeOutput(stream int, p []byte) []byte {
	if stream == 0 {
		n := c.out.stdoutUntilSection(p)
		if c.out.files.complete() {
			c.over(0)
		}
		return p[n:]
	}
	end := c.out.stderr.markerEnd(p)
	if end < 0 {
		c.out.stderr.write(p)
		return nil
	}
	c.out.stderr.write(p[:end])
	c.over(1)
	return p[end:]
}

// ackOnly reports whether the call waits for the loop's ack alone.
func (c *call) ackOnly() bool {
	return !c.proto.session
}

// over marks the stream's part of the call as over, and the call as done
// once both are.
func (c *call) over(stream int) {
	c.stage[stream] = stageOver
	if c.stage[1-stream] == stageOver {
		close(c.done)
	}
}

// drainLocked counts n bytes written between calls, dropped: past the
// output cap in one period (from one call's start to the next) the session
// ends, since moving them costs dockerd and the service CPU outside the
// container's cgroup.
func (s *Session) drainLocked(n int) {
	s.between += int64(n)
	if s.between > s.maxOut {
		s.endLocked("output between calls")
	}
}
