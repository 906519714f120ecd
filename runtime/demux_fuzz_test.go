package runtime

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDemux feeds arbitrary attach streams to demux, with and without the
// runner protocol, read in arbitrary pieces, under arbitrary caps. It must
// never panic; no stream may hold more than its cap (plus, while reading,
// at most one end marker's length) nor anything the program did not write;
// onCap comes at most once and only with a cap passed; decoded output is
// valid UTF-8; a stream whose payloads pass sentBound is read to one byte
// past it, no further. Without the protocol the output must be exactly what a plain
// reading of the frames gives, cut at the cap.
func FuzzDemux(f *testing.F) {
	p := testProtocol()
	ack, end := string(p.ack), marker(p, 0)
	for _, seed := range [][]byte{
		nil,
		frame(1, "hello\n"),
		frames(frame(1, "a"), frame(2, "E1"), frame(1, "b"), frame(2, "E2")),
		frames(frame(1, ""), frame(1, "x")),
		frame(1, "0123456789ABCDEF"),
		frames(frame(1, ack), frame(1, "hello\n"), frame(1, end), frame(2, end)),
		frames(frame(1, ack+"a"+marker(p, 3)), frame(2, "b"+marker(p, 3))),
		frames(frame(1, ack+"a"+fmt.Sprintf("%s%03d %010d %010d %010d 0\n", p.prefix, 0, 0, 0, 3)+"sec"+"more"), frame(2, end)),
		frames(frame(1, ack), frame(1, marker(p, 256)), frame(2, marker(p, 256))),
		frames(frame(1, ack), frame(1, "0123456789"+end[:20]), frame(1, end), frame(2, end)),
		frames(frame(1, ack[:12]), frame(1, "x")),
		frames(frame(1, "a\xffb\xe4\xb8"), frame(2, "\xf0\x9f\x90")),
		frames(frame(1, "a"), frame(3, "boom")),
		frames(frame(1, "a"), frame(7, "?")),
		frame(1, "abcdef")[:frameHeaderSize+3],
		append(frame(1, "ab"), 1, 0, 0),
		{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 'x'},
		frames(frame(1, strings.Repeat("x", 100)), frame(2, "late")),
	} {
		f.Add(seed, uint16(10), false, uint8(0))
		f.Add(seed, uint16(4), true, uint8(1))
		f.Add(seed, uint16(1000), true, uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, capSeed uint16, withProto bool, step uint8) {
		max := 1 + int(capSeed)%2048
		var proto *protocol
		if withProto {
			proto = p
		}
		o := newOutput(max, proto)
		caps := 0
		var r io.Reader = bytes.NewReader(in)
		if step > 0 {
			r = &pieceReader{r: r, n: int(step)}
		}
		err := demux(r, o, func() { caps++ })
		slack := 0
		if proto != nil {
			slack = proto.markerLen()
		}
		for _, b := range []*capBuffer{&o.stdout, &o.stderr} {
			if len(b.buf) > max+slack {
				t.Fatalf("a stream holds %d bytes while reading, over the cap %d plus a marker (%d)", len(b.buf), max, slack)
			}
		}
		if caps > 1 || (caps == 1 && !o.truncated()) {
			t.Fatalf("onCap called %d times, truncated %v", caps, o.truncated())
		}
		o.finish()
		want := plainRead(in)
		checkStream(t, "stdout", o.stdout, max, stripSections(stripAck(want.stdout, proto), proto))
		checkStream(t, "stderr", o.stderr, max, want.stderr)
		switch {
		case int64(len(want.stdout)+len(want.stderr)) > o.sentMax:
			checkOverSent(t, o, caps, err)
		case proto == nil:
			checkPlain(t, o, max, caps, err, want)
		}
	})
}

// checkStream checks one settled stream: within the cap, a prefix of what
// the program wrote, and valid UTF-8 once decoded.
func checkStream(t *testing.T, name string, b capBuffer, max int, written []byte) {
	t.Helper()
	if len(b.buf) > max {
		t.Fatalf("%s: %d bytes kept, over the cap %d", name, len(b.buf), max)
	}
	if !bytes.HasPrefix(written, b.buf) {
		t.Fatalf("%s: kept %q, which is not a prefix of what was written (%q)", name, b.buf, written)
	}
	if s := decode(b.buf); !utf8.ValidString(s) {
		t.Fatalf("%s: decoded output is not valid UTF-8: %q", name, s)
	}
}

// checkPlain checks a run without the protocol against a plain reading of
// the frames: the same bytes cut at the cap, truncated exactly when over
// it, onCap exactly then, and the same kind of ending.
func checkPlain(t *testing.T, o *output, max, caps int, err error, want plain) {
	t.Helper()
	for _, s := range []struct {
		name    string
		b       capBuffer
		written []byte
	}{{"stdout", o.stdout, want.stdout}, {"stderr", o.stderr, want.stderr}} {
		if !bytes.Equal(s.b.buf, s.written[:min(len(s.written), max)]) {
			t.Fatalf("%s: kept %q, want the first %d bytes of %q", s.name, s.b.buf, max, s.written)
		}
		if s.b.truncated != (len(s.written) > max) {
			t.Fatalf("%s: truncated %v with %d bytes written and a cap of %d", s.name, s.b.truncated, len(s.written), max)
		}
	}
	if (caps == 1) != o.truncated() {
		t.Fatalf("onCap called %d times, truncated %v", caps, o.truncated())
	}
	switch {
	case want.ending == endClean && err != nil:
		t.Fatalf("demux = %v, want nil at a clean end of stream", err)
	case want.ending == endCut && !errors.Is(err, io.ErrUnexpectedEOF):
		t.Fatalf("demux = %v, want io.ErrUnexpectedEOF for a stream cut inside a frame", err)
	case want.ending == endBad && err == nil:
		t.Fatalf("demux = nil, want an error for a daemon error or an unknown stream")
	}
}

// checkOverSent checks a run that sent more than sentBound: read to one
// byte past it and no further, truncated, onCap told, and a clean return.
func checkOverSent(t *testing.T, o *output, caps int, err error) {
	t.Helper()
	if o.sent != o.sentMax+1 || !o.truncated() || caps != 1 || err != nil {
		t.Fatalf("%d bytes read of a bound of %d, truncated %v, onCap told %d times, demux = %v; want one past the bound, truncated, told once, nil",
			o.sent, o.sentMax, o.truncated(), caps, err)
	}
}

// How a plain reading of frames ends.
const (
	endClean = iota // at a frame boundary
	endCut          // inside a header or a payload
	endBad          // at a daemon error frame or an unknown stream
)

// plain is what a plain reading of the frames finds.
type plain struct {
	stdout, stderr []byte
	ending         int
}

// plainRead reads the frames of in the simplest way, without caps.
func plainRead(in []byte) plain {
	var p plain
	for len(in) > 0 {
		if len(in) < frameHeaderSize {
			p.ending = endCut
			return p
		}
		stream, size := in[0], int(binary.BigEndian.Uint32(in[4:frameHeaderSize]))
		in = in[frameHeaderSize:]
		if stream != streamStdout && stream != streamStderr {
			p.ending = endBad
			return p
		}
		payload := in[:min(size, len(in))]
		in = in[len(payload):]
		if stream == streamStdout {
			p.stdout = append(p.stdout, payload...)
		} else {
			p.stderr = append(p.stderr, payload...)
		}
		if len(payload) < size {
			p.ending = endCut
			return p
		}
	}
	return p
}

// stripAck is stdout as the program wrote it: without the runner's ack
// when the protocol is on and stdout starts with it.
func stripAck(stdout []byte, proto *protocol) []byte {
	if proto != nil && bytes.HasPrefix(stdout, proto.ack) {
		return stdout[len(proto.ack):]
	}
	return stdout
}

// stripSections is stdout as the program wrote it, read the simplest way:
// after each whole end marker, the files section it announces is not
// output.
func stripSections(stdout []byte, proto *protocol) []byte {
	if proto == nil {
		return stdout
	}
	var out []byte
	n := proto.markerLen()
	for len(stdout) > 0 {
		i := bytes.Index(stdout, proto.prefix)
		if i < 0 || i+n > len(stdout) {
			return append(out, stdout...)
		}
		rep, ok := proto.endReport(stdout[i : i+n])
		if !ok {
			out = append(out, stdout[:i+1]...)
			stdout = stdout[i+1:]
			continue
		}
		out = append(out, stdout[:i+n]...)
		stdout = stdout[i+n+int(min(rep.FilesLen, int64(len(stdout)-i-n))):]
	}
	return out
}

// pieceReader returns at most n bytes per Read, as a network connection
// may, so frames and the ack arrive in pieces.
type pieceReader struct {
	r io.Reader
	n int
}

// Read implements io.Reader.
func (p *pieceReader) Read(b []byte) (int, error) {
	return p.r.Read(b[:min(len(b), p.n)])
}
