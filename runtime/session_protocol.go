package runtime

import (
	"bytes"
	"strconv"
)

// Runner protocol 5 adds sessions to protocol 4 (protocol.go), which is
// unchanged: a warm container's runner reads its first line, and a
// protocol 4 header runs one program as before. A session header
//
//	stdin, to the runner:     "S <token> <maxvalue>\n"
//
// switches it into its loop instead. It answers with the loop's ack,
// "\x00sandboxd:<token>:go\n" on stdout, once the image's preloaded modules
// are imported (so no call's time limit counts them). Then, for every call:
//
//	stdin, to the runner:     a protocol 4 header with a fresh token, the
//	                          code, its stdin and its files in, as in
//	                          protocol 4
//	stdout and stderr, both:  the call's ack, "\x00sandboxd:<token>:go\n",
//	                          once the call is read and its files in are
//	                          written, before it runs; then the call's
//	                          output; then its end marker,
//	                          "\x00sandboxd:<token>:<sss> <cpu> <rss> <len> <t> <v> <vlen> <i>\n",
//	                          protocol 4's fields (<rss> the call's own peak
//	                          where the kernel lets the runner reset it, else
//	                          the session's so far) followed by <v>, 0 when
//	                          the call has no value (its last statement is
//	                          no expression, or its value is None), 1 when
//	                          <vlen> bytes of the value's repr follow the
//	                          files section, 2 when they are the repr cut at
//	                          <maxvalue> bytes; <vlen> in 10 digits; <i> 1
//	                          when the runner's interrupt ended the call
//	                          (status 130), else 0
//	stdout, after the marker: the files section (<len> bytes), then the
//	                          value (<vlen> bytes, UTF-8)
//
// What a stream carries before its call's ack, or after its end marker
// (and, on stdout, the section and value), was written between calls: the
// service counts it and drops it (session_reader.go). Between calls the
// runner points descriptors 1 and 2 at /dev/null, so only a process a call
// left behind, or a program that found the runner's private descriptors,
// writes anything there. The runner ignores SIGINT between calls; during a
// call SIGINT raises KeyboardInterrupt in its main thread. The session ends
// when the service closes stdin (the runner exits 0), or at a header that
// does not parse (exit 2): a program that read the protocol stream itself
// ends its own session.

// sessionHeader is the line that switches a runner into its loop, with the
// loop's token and the cap on a call's value.
func sessionHeader(token string, maxValue int64) []byte {
	b := append([]byte("S "), token...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, maxValue, 10)
	return append(b, '\n')
}

// newCallProtocol returns the protocol of one call in a session: a fresh
// token, the caps on its files out and its value, the session's marker.
func newCallProtocol(maxFiles int, maxFilesBytes, maxValue int64) *protocol {
	p := newProtocol(maxFiles, maxFilesBytes)
	p.tail, p.maxValue = sessionMarkerTail, maxValue
	return p
}

// ackSeek finds a call's ack in one stream, however the stream's frames cut
// it: everything before it is no part of the call.
type ackSeek struct {
	ack []byte
	// held is the end of what was seen so far that may start the ack.
	held []byte
}

// scan looks for the ack in what was held and p. It returns how many of
// those bytes came before the ack (to drop), and, when the ack was found,
// what follows it, with found true. Without the ack, the bytes that may
// start it are held for the next scan, and the rest is dropped.
func (a *ackSeek) scan(p []byte) (dropped int, rest []byte, found bool) {
	buf := append(a.held, p...)
	if i := bytes.Index(buf, a.ack); i >= 0 {
		a.held = nil
		return i, buf[i+len(a.ack):], true
	}
	k := min(len(buf), len(a.ack)-1)
	for ; k > 0 && !bytes.HasPrefix(a.ack, buf[len(buf)-k:]); k-- {
	}
	a.held = append([]byte(nil), buf[len(buf)-k:]...)
	return len(buf) - k, nil, false
}
