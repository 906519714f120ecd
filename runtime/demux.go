package runtime

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// The stream IDs in the first byte of an attach frame header (Docker's
// stdcopy format: 1 byte stream, 3 zero bytes, 4 bytes big-endian length).
const (
	streamStdout    = 1
	streamStderr    = 2
	streamSystemErr = 3
	frameHeaderSize = 8
)

// capBuffer keeps at most max bytes of one stream.
type capBuffer struct {
	buf       []byte
	max       int
	truncated bool
}

// readFrame reads a payload of size bytes from r, keeping what fits under
// the cap and discarding the rest, so a flood costs no memory past the cap.
func (b *capBuffer) readFrame(r io.Reader, size int) error {
	take := min(size, b.max-len(b.buf))
	if take > 0 {
		start := len(b.buf)
		if cap(b.buf) < start+take {
			grown := make([]byte, start, max(min(2*cap(b.buf), b.max), start+take))
			copy(grown, b.buf)
			b.buf = grown
		}
		b.buf = b.buf[:start+take]
		n, err := io.ReadFull(r, b.buf[start:])
		b.buf = b.buf[:start+n]
		if err != nil {
			return unexpected(err)
		}
	}
	if rest := int64(size - take); rest > 0 {
		b.truncated = true
		if _, err := io.CopyN(io.Discard, r, rest); err != nil {
			return unexpected(err)
		}
	}
	return nil
}

// demux reads attach frames from r into stdout and stderr until the stream
// ends. The first time either stream passes its cap it calls onCap, and goes
// on reading: the other stream's output still counts, and a connection that
// is read never stalls the daemon. It returns nil at a clean end of stream,
// io.ErrUnexpectedEOF when the stream ends inside a frame, or the read error;
// whatever was read before is kept in the buffers.
func demux(r io.Reader, stdout, stderr *capBuffer, onCap func()) error {
	var hdr [frameHeaderSize]byte
	capped := false
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return unexpected(err)
		}
		size := int(binary.BigEndian.Uint32(hdr[4:]))
		var dst *capBuffer
		switch hdr[0] {
		case streamStdout:
			dst = stdout
		case streamStderr:
			dst = stderr
		case streamSystemErr:
			msg := make([]byte, min(size, 4096))
			n, _ := io.ReadFull(r, msg)
			return fmt.Errorf("runtime: daemon error on the attach stream: %s", msg[:n])
		default:
			return fmt.Errorf("runtime: attach frame with unknown stream %d", hdr[0])
		}
		err := dst.readFrame(r, size)
		if dst.truncated && !capped {
			capped = true
			onCap()
		}
		if err != nil {
			return err
		}
	}
}

// unexpected turns an EOF inside a frame into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// decode turns program output into text: UTF-8, each run of invalid bytes
// replaced by U+FFFD, so a program's binary output is an answer, not an error.
func decode(b []byte) string {
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
