package runtime

import (
	"bytes"

	"sandboxd/internal/runnerproto"
)

// A session (internal/runnerproto holds its protocol) starts with a session
// header that switches the runner into its loop, and each call is a run's
// header, code, stdin and files in, answered with a session's end marker.

// sessionHeader is the line that switches a runner into its loop in the
// language, with the loop's token and the cap on a call's value.
func sessionHeader(token string, maxValue int64, language string) []byte {
	return runnerproto.SessionHeader{Token: token, MaxValue: maxValue, Language: language}.Append(nil)
}

// newCallProtocol returns the protocol of one call in a session: a fresh
// token, the caps on its files out and its value, the session's marker.
func newCallProtocol(maxFiles int, maxFilesBytes, maxValue int64) *protocol {
	p := newProtocol(maxFiles, maxFilesBytes)
	p.session, p.tail, p.maxValue = true, runnerproto.SessionMarkerTail, maxValue
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
