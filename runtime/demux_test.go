package runtime

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// frame builds one attach frame of the stream with the payload.
func frame(stream byte, payload string) []byte {
	hdr := make([]byte, frameHeaderSize, frameHeaderSize+len(payload))
	hdr[0] = stream
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(payload)))
	return append(hdr, payload...)
}

// frames concatenates frames into one stream.
func frames(fs ...[]byte) []byte {
	return bytes.Join(fs, nil)
}

func TestDemux(t *testing.T) {
	tests := []struct {
		name           string
		in             []byte
		max            int
		stdout, stderr string
		err            error
		truncOut       bool
		truncErr       bool
	}{
		{name: "empty stream", in: nil, max: 10},
		{name: "one stdout frame", in: frame(1, "hello\n"), max: 10, stdout: "hello\n"},
		{
			name:   "interleaved streams stay apart",
			in:     frames(frame(1, "a"), frame(2, "E1"), frame(1, "b"), frame(2, "E2")),
			max:    10,
			stdout: "ab", stderr: "E1E2",
		},
		{name: "empty frame", in: frames(frame(1, ""), frame(1, "x")), max: 10, stdout: "x"},
		{name: "exactly at the cap is not truncated", in: frames(frame(1, "12345"), frame(1, "67890")), max: 10, stdout: "1234567890"},
		{
			name: "one frame over the cap", in: frame(1, "12345678901"), max: 10,
			stdout: "1234567890", truncOut: true,
		},
		{
			name: "cap crossed by a later frame", in: frames(frame(1, "123456"), frame(1, "789012"), frame(1, "more")), max: 10,
			stdout: "1234567890", truncOut: true,
		},
		{
			name: "the other stream goes on after a cap", in: frames(frame(1, "ok"), frame(2, "0123456789AB"), frame(2, "C"), frame(1, " still")), max: 10,
			stdout: "ok still", stderr: "0123456789", truncErr: true,
		},
		{
			name: "both capped", in: frames(frame(2, "0123456789AB"), frame(1, "0123456789AB")), max: 10,
			stdout: "0123456789", stderr: "0123456789", truncOut: true, truncErr: true,
		},
		{name: "partial payload past the cap", in: frame(1, "0123456789AB")[:frameHeaderSize+11], max: 10, stdout: "0123456789", err: io.ErrUnexpectedEOF, truncOut: true},
		{name: "partial header", in: append(frame(1, "ab"), 1, 0, 0), max: 10, stdout: "ab", err: io.ErrUnexpectedEOF},
		{name: "partial payload kept", in: frame(1, "abcdef")[:frameHeaderSize+3], max: 10, stdout: "abc", err: io.ErrUnexpectedEOF},
		{name: "unknown stream", in: frames(frame(1, "a"), frame(7, "?")), max: 10, stdout: "a", err: errAny},
		{name: "daemon error frame", in: frames(frame(1, "a"), frame(3, "boom")), max: 10, stdout: "a", err: errAny},
	}
	for _, tt := range tests {
		wholeAndByteByByte(t, tt.name, tt.in, func(t *testing.T, r io.Reader) {
			o := newOutput(tt.max, nil)
			caps := 0
			err := demux(r, o, func() { caps++ })
			o.finish()
			out, errb := o.stdout, o.stderr
			switch {
			case tt.err == errAny && err == nil:
				t.Errorf("err = nil, want an error")
			case tt.err != errAny && !errors.Is(err, tt.err):
				t.Errorf("err = %v, want %v", err, tt.err)
			}
			if string(out.buf) != tt.stdout || string(errb.buf) != tt.stderr {
				t.Errorf("stdout %q stderr %q, want %q %q", out.buf, errb.buf, tt.stdout, tt.stderr)
			}
			if out.truncated != tt.truncOut || errb.truncated != tt.truncErr {
				t.Errorf("truncated %v/%v, want %v/%v", out.truncated, errb.truncated, tt.truncOut, tt.truncErr)
			}
			if wantCaps := map[bool]int{false: 0, true: 1}[tt.truncOut || tt.truncErr]; caps != wantCaps {
				t.Errorf("onCap called %d times, want %d", caps, wantCaps)
			}
		})
	}
}

// wholeAndByteByByte runs f as the subtest name on a reader of in, then as
// name + "/one byte at a time" on a reader that gives in one byte per Read,
// so that a frame or marker split across reads is tested too.
func wholeAndByteByByte(t *testing.T, name string, in []byte, f func(t *testing.T, r io.Reader)) {
	t.Helper()
	t.Run(name, func(t *testing.T) { f(t, bytes.NewReader(in)) })
	t.Run(name+"/one byte at a time", func(t *testing.T) { f(t, iotest.OneByteReader(bytes.NewReader(in))) })
}

// errAny marks a case that must fail, whatever the error.
var errAny = errors.New("any error")

func TestDemuxCapSignalsAtOnce(t *testing.T) {
	// The cap is signalled when the frame that crosses it arrives, before
	// the stream ends: the pipe below is never closed by the writer.
	pr, pw := io.Pipe()
	defer pr.Close()
	go func() {
		_, _ = pw.Write(frames(frame(1, strings.Repeat("x", 100)), frame(1, strings.Repeat("y", 1<<20))))
	}()
	capped := make(chan struct{})
	go func() { _ = demux(pr, newOutput(150, nil), func() { close(capped) }) }()
	select {
	case <-capped:
	case <-time.After(5 * time.Second):
		t.Fatal("onCap was not called while the stream stayed open")
	}
}

func TestCapBufferKeepsNoMoreThanTheCap(t *testing.T) {
	b := capBuffer{max: 150}
	flood := strings.Repeat("z", 1<<20)
	for range 3 {
		b.write([]byte(flood))
	}
	if len(b.buf) != 150 || cap(b.buf) > 150 || !b.truncated {
		t.Errorf("kept %d bytes in a buffer of %d, truncated %v; want 150 in at most 150, true", len(b.buf), cap(b.buf), b.truncated)
	}
}

func TestDecode(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain\n", "plain\n"},
		{"h\u00e9llo \u4e16\u754c \U0001f40d", "h\u00e9llo \u4e16\u754c \U0001f40d"},
		{"a\xffb\n", "a\ufffdb\n"},
		{"\xff\xfe\xfd", "\ufffd"},
		{"cut \xe4\xb8", "cut \ufffd"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := decode([]byte(tt.in)); got != tt.want {
			t.Errorf("decode(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
