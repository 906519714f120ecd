package runtime

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"time"

	"sandboxd/internal/runnerproto"
)

// The stream IDs in the first byte of an attach frame header (Docker's
// stdcopy format: 1 byte stream, 3 zero bytes, 4 bytes big-endian length).
const (
	streamStdout    = 1
	streamStderr    = 2
	streamSystemErr = 3
	frameHeaderSize = 8
)

// readChunk is the most of a frame's payload read at once; dockerd's own
// copy buffer is 32 KiB, so a frame is rarely larger.
const readChunk = 32 << 10

// capBuffer keeps at most max bytes of one stream's program output. With a
// protocol, it holds up to one end marker's length more, as long as those
// bytes can still be the runner's end marker: the marker is not the
// program's output, so it must not count against the cap.
type capBuffer struct {
	buf       []byte
	max       int
	truncated bool
	proto     *protocol
}

// slack is how far past max the buffer may hold a possible end marker.
func (b *capBuffer) slack() int {
	if b.proto == nil {
		return 0
	}
	return b.proto.markerLen()
}

// write appends p, keeping what fits under the cap and dropping the rest, so
// a flood costs no memory past the cap. The buffer is truncated (and cut to
// max) once the program's output is known to be over the cap.
func (b *capBuffer) write(p []byte) {
	if b.truncated || len(p) == 0 {
		return
	}
	limit := b.max + b.slack()
	take := min(len(p), limit-len(b.buf))
	if need := len(b.buf) + take; need > cap(b.buf) {
		grown := make([]byte, len(b.buf), min(max(2*cap(b.buf), need, 512), limit))
		copy(grown, b.buf)
		b.buf = grown
	}
	b.buf = append(b.buf, p[:take]...)
	if take < len(p) || (len(b.buf) > b.max && !b.mayEndInMarker()) {
		b.truncated = true
		b.buf = b.buf[:b.max]
	}
}

// mayEndInMarker reports whether the buffer can still be at most max bytes
// of output followed by the start of an end marker.
func (b *capBuffer) mayEndInMarker() bool {
	if b.proto == nil {
		return false
	}
	for k := max(0, len(b.buf)-b.slack()); k <= min(b.max, len(b.buf)); k++ {
		if b.proto.partialMarker(b.buf[k:]) {
			return true
		}
	}
	return false
}

// finish settles the buffer once reading has ended: a whole end marker at
// its very end is the runner's and is cut off; what remains is the output,
// cut at the cap.
func (b *capBuffer) finish() {
	if b.proto != nil && !b.truncated {
		if _, ok := b.proto.endReport(b.buf); ok {
			b.buf = b.buf[:len(b.buf)-b.proto.markerLen()]
		}
	}
	if len(b.buf) > b.max {
		b.truncated = true
		b.buf = b.buf[:b.max]
	}
}

// output is what a run printed, and where the runner's ack and end marker
// stand. Without a protocol it is plain capped output.
type output struct {
	proto  *protocol
	stdout capBuffer
	stderr capBuffer
	// ackSeen counts the bytes of the ack seen at the start of stdout; it
	// is -1 when stdout started with something else.
	ackSeen int
	// files is the files section after the last end marker on stdout.
	files filesSection
	// late reports that the ack seen so far is its late form.
	late bool
	// ackC, when not nil, is sent (once) whether the ack was late, when
	// the whole ack has been seen; it must have room for that value.
	ackC    chan bool
	ackTold bool
	// ackAt is when the whole ack was seen, endAt when the end marker
	// (and the files section after it) was: the phases of the run
	// (phases.go). Read only once reading has ended.
	ackAt, endAt time.Time
	// sent counts every byte of both streams read so far, the ack, the
	// markers and the files sections included (a forged section is as
	// costly to move as output); past sentMax the run is over its cap.
	sent, sentMax int64
}

// filesSection collects the files section that follows an end marker on
// stdout: exactly the length the marker announced (at most the protocol's
// filesBound), grown as it arrives, never counted as output.
type filesSection struct {
	// want is the section's announced length; -1 outside a section.
	want int
	buf  []byte
}

// collecting reports whether a section is still arriving.
func (f *filesSection) collecting() bool {
	return f.want >= 0 && len(f.buf) < f.want
}

// complete reports whether a whole section has arrived.
func (f *filesSection) complete() bool {
	return f.want >= 0 && len(f.buf) == f.want
}

// take appends what p holds of the section and returns how much it took.
func (f *filesSection) take(p []byte) int {
	n := min(len(p), f.want-len(f.buf))
	if need := len(f.buf) + n; need > cap(f.buf) {
		grown := make([]byte, len(f.buf), min(max(2*cap(f.buf), need, 4096), f.want))
		copy(grown, f.buf)
		f.buf = grown
	}
	f.buf = append(f.buf, p[:n]...)
	return n
}

// newOutput returns empty output capped at max bytes per stream, and at
// sentBound(max, proto) bytes sent in all.
func newOutput(max int, proto *protocol) *output {
	return &output{
		proto:   proto,
		stdout:  capBuffer{max: max, proto: proto},
		stderr:  capBuffer{max: max, proto: proto},
		files:   filesSection{want: -1},
		sentMax: sentBound(max, proto),
	}
}

// writeStdout takes the ack off the start of stdout and keeps the rest.
func (o *output) writeStdout(p []byte) {
	for len(p) > 0 {
		p = p[o.stdoutUntilSection(p):]
	}
}

// stdoutUntilSection is writeStdout up to the end of the first files
// section that p completes: it returns how much of p it took (all of it
// when no section completes in p). A session's reader stops there, where
// the call's stdout ends.
func (o *output) stdoutUntilSection(p []byte) int {
	n := len(p)
	if o.proto != nil && o.ackSeen >= 0 && o.ackSeen < len(o.proto.ack) {
		p = o.takeAck(p)
	}
	for len(p) > 0 {
		if o.files.collecting() {
			p = p[o.files.take(p):]
			if o.files.complete() {
				return n - len(p)
			}
			continue
		}
		if o.files.complete() {
			// Output after a whole section: that marker was not the
			// runner's last (a program may print one); this is output again.
			o.files = filesSection{want: -1}
		}
		end := o.stdout.markerEnd(p)
		if end < 0 {
			o.stdout.write(p)
			return n
		}
		o.stdout.write(p[:end])
		p = p[end:]
		if rep, ok := o.proto.endReport(o.stdout.buf); ok && !o.stdout.truncated {
			o.files = filesSection{want: int(sectionLen(rep))}
			if o.files.complete() {
				return n - len(p)
			}
		}
	}
	return n
}

// takeAck takes what p holds of the ack (either form) off the start of
// stdout and returns the rest. Once the whole ack is seen, ackC is sent
// whether it was the late form; what turns out not to be an ack is output.
func (o *output) takeAck(p []byte) []byte {
	for len(p) > 0 && o.ackSeen >= 0 && o.ackSeen < len(o.proto.ack) {
		c := p[0]
		switch {
		case c == o.ackForm()[o.ackSeen]:
		case o.ackSeen == len(o.proto.ack)-2 && c == o.proto.lateAck[o.ackSeen]:
			o.late = true
		default:
			// Not the runner's ack: what looked like its start is output.
			o.stdout.write(o.ackForm()[:o.ackSeen])
			o.ackSeen = -1
			return p
		}
		o.ackSeen++
		p = p[1:]
	}
	if o.ackSeen == len(o.proto.ack) && o.ackAt.IsZero() {
		o.ackAt = time.Now()
	}
	if o.ackSeen == len(o.proto.ack) && o.ackC != nil && !o.ackTold {
		o.ackTold = true
		o.ackC <- o.late
	}
	return p
}

// ackForm is the form of the ack seen so far.
func (o *output) ackForm() []byte {
	if o.late {
		return o.proto.lateAck
	}
	return o.proto.ack
}

// markerEnd returns the index in p just past the first whole end marker
// that ends in p, counting the start of one the buffer may already hold,
// or -1 when none does. Once the buffer is truncated nothing is a marker.
func (b *capBuffer) markerEnd(p []byte) int {
	if b.proto == nil || b.truncated {
		return -1
	}
	n := b.proto.markerLen()
	held := b.buf[max(0, len(b.buf)-(n-1)):]
	for i := range held {
		need := n - (len(held) - i)
		if need <= len(p) && b.proto.partialMarker(held[i:]) {
			whole := append(append(make([]byte, 0, n), held[i:]...), p[:need]...)
			if _, ok := b.proto.endReport(whole); ok {
				return need
			}
		}
	}
	for off := 0; off < len(p); {
		i := bytes.Index(p[off:], b.proto.prefix)
		if i < 0 || off+i+n > len(p) {
			return -1
		}
		if _, ok := b.proto.endReport(p[off+i : off+i+n]); ok {
			return off + i + n
		}
		off += i + 1
	}
	return -1
}

// acked reports whether the runner acknowledged the program, that is,
// whether the program started.
func (o *output) acked() bool {
	return o.proto != nil && o.ackSeen == len(o.proto.ack)
}

// ended reports whether the runner has reported the program's end: after
// the ack, both streams end with the end marker, with the same report, and
// the files section after it on stdout has arrived whole.
func (o *output) ended() (runnerproto.EndReport, bool) {
	if !o.acked() || o.truncated() || !o.files.complete() {
		return runnerproto.EndReport{}, false
	}
	out, ok := o.proto.endReport(o.stdout.buf)
	if !ok {
		return runnerproto.EndReport{}, false
	}
	errs, ok := o.proto.endReport(o.stderr.buf)
	if !ok || errs != out {
		return runnerproto.EndReport{}, false
	}
	return out, true
}

// truncated reports whether either stream passed its cap, or both
// together sent more than sentBound.
func (o *output) truncated() bool {
	return o.stdout.truncated || o.stderr.truncated || o.overSent()
}

// finish settles both streams once reading has ended.
func (o *output) finish() {
	o.stdout.finish()
	o.stderr.finish()
}

// demux reads attach frames from r into o until the stream ends or the
// runner reports the program's end. Each stream is in order on its own (the
// daemon copies each pipe in order), so once both end with the marker,
// everything the program wrote before it has arrived. The first time either
// stream passes its cap it calls onCap, and goes on reading: the other
// stream's output still counts, and a connection that is read never stalls
// the daemon. But it reads no more than one byte past sentBound of both
// streams' payloads: a run that sends that much is truncated, reported to
// onCap, and left unread (the caller closes the connection), so what a run
// moves through dockerd and the service is bounded whatever it forges.
// (The frame headers cost at most 8 bytes per payload byte on top: dockerd
// frames only what it read from a pipe, never an empty write.) It returns
// nil at a clean end of stream, at the end marker or past sentBound,
// io.ErrUnexpectedEOF when the stream ends inside a frame, or the read error;
// whatever was read before is kept.
func demux(r io.Reader, o *output, onCap func()) error {
	var hdr [frameHeaderSize]byte
	var chunk []byte
	capped := false
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return unexpected(err)
		}
		size := int(binary.BigEndian.Uint32(hdr[4:]))
		var write func([]byte)
		switch hdr[0] {
		case streamStdout:
			write = o.writeStdout
		case streamStderr:
			write = o.stderr.write
		case streamSystemErr:
			msg := make([]byte, min(size, 4096))
			n, _ := io.ReadFull(r, msg)
			return fmt.Errorf("runtime: daemon error on the attach stream: %s", msg[:n])
		default:
			return fmt.Errorf("runtime: attach frame with unknown stream %d", hdr[0])
		}
		if chunk == nil && size > 0 {
			chunk = make([]byte, readChunk)
		}
		for size > 0 {
			n, err := io.ReadFull(r, chunk[:min(size, len(chunk), o.room())])
			o.sent += int64(n)
			write(chunk[:n])
			size -= n
			if !capped && o.truncated() {
				capped = true
				onCap()
			}
			if err != nil {
				return unexpected(err)
			}
			if o.overSent() {
				return nil
			}
		}
		if _, ok := o.ended(); ok {
			o.endAt = time.Now()
			return nil
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
