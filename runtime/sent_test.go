package runtime

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// smallProtocol is testProtocol with small caps on the files out, so a
// flood many times sentBound stays small in memory.
func smallProtocol() *protocol {
	p := testProtocol()
	p.maxFiles, p.maxFilesBytes = 2, 4096
	return p
}

// forgedEnd is an end marker that announces a files section of n bytes.
func forgedEnd(p *protocol, n int64) string {
	return fmt.Sprintf("%s%03d %010d %010d %010d 0\n", p.prefix, 0, 0, 0, n)
}

// flood is an attach stream: the ack, then unit on the stream again and
// again, in frames of at most frameMax payload bytes, until total payload
// bytes have been framed. It returns the stream and its frame count.
func flood(p *protocol, stream byte, unit string, frameMax, total int) []byte {
	var payload strings.Builder
	for payload.Len() < total {
		payload.WriteString(unit)
	}
	rest := payload.String()[:total]
	in := frame(streamStdout, string(p.ack))
	for len(rest) > 0 {
		n := min(frameMax, len(rest))
		in = append(in, frame(stream, rest[:n])...)
		rest = rest[n:]
	}
	return in
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

// Read implements io.Reader.
func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += n
	return n, err
}

// TestDemuxSentIsBounded floods the demultiplexer, with the run's token,
// in every way that once stepped around the per-stream caps or might:
// forged end markers each followed by a whole files section of filesBound
// (which no stream's cap counts), the same split across frames and reads,
// markers on stderr, a section announced and never sent (so the output
// after it is taken for the section), forged acks, sections between lines
// of output. Each stream is ten times sentBound: each is cut at sentBound,
// truncated, onCap told once, and no more than one byte past it read.
func TestDemuxSentIsBounded(t *testing.T) {
	p := smallProtocol()
	const max = 1024
	bound := sentBound(max, p)
	fb := p.filesBound()
	section := strings.Repeat("x", int(fb))
	tests := []struct {
		name     string
		stream   byte
		unit     string
		frameMax int
	}{
		{"forged sections", streamStdout, forgedEnd(p, fb) + section, readChunk},
		{"forged sections split across frames", streamStdout, forgedEnd(p, fb) + section, 7},
		{"markers on stderr", streamStderr, forgedEnd(p, fb), readChunk},
		{"markers on stdout alone", streamStdout, forgedEnd(p, 0), readChunk},
		{"a section announced, never sent", streamStdout, forgedEnd(p, fb) + strings.Repeat("y", max/2), readChunk},
		{"forged acks", streamStdout, string(p.ack), readChunk},
		{"sections between output", streamStdout, "out\n" + forgedEnd(p, 100) + strings.Repeat("s", 100) + "more\n", 4096},
	}
	for _, tt := range tests {
		in := flood(p, tt.stream, tt.unit, tt.frameMax, 10*int(bound))
		for _, read := range []struct {
			name string
			wrap func(io.Reader) io.Reader
		}{
			{"whole", func(r io.Reader) io.Reader { return r }},
			{"in pieces", func(r io.Reader) io.Reader { return &pieceReader{r: r, n: 5} }},
			{"one byte at a time", iotest.OneByteReader},
		} {
			t.Run(tt.name+"/"+read.name, func(t *testing.T) {
				cr := &countingReader{r: read.wrap(bytes.NewReader(in))}
				o := newOutput(max, p)
				caps := 0
				if err := demux(cr, o, func() { caps++ }); err != nil {
					t.Fatalf("demux: %v", err)
				}
				if !o.truncated() || caps != 1 {
					t.Errorf("truncated %v, onCap told %d times; want truncated, told once", o.truncated(), caps)
				}
				if o.sent > bound+1 {
					t.Errorf("%d bytes sent were read, over sentBound %d plus one", o.sent, bound)
				}
				// The payload read, its frames' headers, the ack's frame.
				frames := int(bound+1)/tt.frameMax + 2
				if most := int(bound) + 1 + frameHeaderSize*(frames+1); cr.n > most {
					t.Errorf("%d bytes read of %d, over %d: reading went on past sentBound", cr.n, len(in), most)
				}
				if _, ok := o.ended(); ok {
					t.Error("a run over sentBound ended as the runner's")
				}
			})
		}
	}
}

// TestDemuxHonestRunAtTheCaps sends what the runner may at most: the
// ack, max bytes of output on each stream, the end markers and a files
// section of filesBound. sentBound leaves it whole: ended, not truncated.
// A stream that floods past its cap still leaves room to read the other
// stream's last lines, up to as much again.
func TestDemuxHonestRunAtTheCaps(t *testing.T) {
	p := smallProtocol()
	const max = 1024
	fb := p.filesBound()
	end := forgedEnd(p, fb)
	in := frames(frame(1, string(p.ack)+strings.Repeat("o", max)), frame(2, strings.Repeat("e", max)),
		frame(1, end+strings.Repeat("f", int(fb))), frame(2, end))
	o := newOutput(max, p)
	if err := demux(bytes.NewReader(in), o, func() { t.Error("onCap told of an honest run") }); err != nil {
		t.Fatalf("demux: %v", err)
	}
	if _, ok := o.ended(); !ok || o.truncated() || len(o.files.buf) != int(fb) {
		t.Fatalf("ended %v, truncated %v, section of %d bytes; want ended whole with %d", ok, o.truncated(), len(o.files.buf), fb)
	}
	if o.sent != int64(len(p.ack))+2*max+2*int64(p.markerLen())+fb || o.sent > sentBound(max, p)-2*max {
		t.Errorf("%d bytes sent; sentBound %d must hold it with 2 x max to spare", o.sent, sentBound(max, p))
	}

	// No protocol, so no section: stdout floods 3 x max, then stderr ends.
	o = newOutput(max, nil)
	in = frames(frame(1, strings.Repeat("o", 3*max)), frame(2, "Traceback: the last line"))
	if err := demux(bytes.NewReader(in), o, func() {}); err != nil {
		t.Fatalf("demux: %v", err)
	}
	if string(o.stderr.buf) != "Traceback: the last line" || !o.stdout.truncated || o.overSent() {
		t.Errorf("stderr %q, stdout truncated %v, over sentBound %v; want stderr whole after stdout's flood", o.stderr.buf, o.stdout.truncated, o.overSent())
	}
}
