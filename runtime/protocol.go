package runtime

import (
	"strconv"

	"sandboxd"
)

// The runner protocol: how the service and the image's runner
// (images/python/run.py) talk over a container's link (link.go): its
// attach connection, or the runner's own sockets.
//
//	stdin, to the runner:     "<token> <n> <m> <f> <k> <maxfiles> <maxbytes>\n",
//	                          then the n bytes of the program, the m bytes of
//	                          its standard input and the k bytes of its f
//	                          files in, as records; <maxfiles> and <maxbytes>
//	                          are the caps on the files out (Config.MaxFiles,
//	                          Config.MaxFilesBytes)
//	stdout, from the runner:  the ack, "\x00sandboxd:<token>:go\n", once the
//	                          program is read and before it runs; its late
//	                          form, ending ":gl\n", when the program came
//	                          before the runner was ready for it (its
//	                          interpreter still starting or importing the
//	                          image's preloaded modules, in a container
//	                          started for its run): the time limit then
//	                          counts from the ack instead of the hand-over
//	                          (deadline.go)
//	stdout and stderr, both:  the end marker,
//	                          "\x00sandboxd:<token>:<sss> <cpu> <rss> <len> <t>\n",
//	                          once the program has ended (normally, by
//	                          SystemExit or an exception) and its output is
//	                          flushed; <sss> is its exit status in 3 digits,
//	                          <cpu> the CPU milliseconds (user + system,
//	                          children included) it used, <rss> its peak
//	                          resident memory in KiB and <len> the length of
//	                          the files section, each in 10 digits, and <t>
//	                          1 when a file out was left out or listed
//	                          without content, else 0
//	stdout, after the marker: the files section: <len> bytes of records,
//	                          the files out in name order
//	a record:                 "<kind> <namelen> <size>\n<name>[<content>]",
//	                          decimal numbers; kind "c" is followed by the
//	                          <size> bytes of the file, kind "l" lists a
//	                          file of <size> bytes without its content
//
// The token is random and new for every run, so no output matches it by
// chance. A program can read it from its own process, so the most it can do
// with it is misreport its own result (and files): the container is killed
// and removed after every run either way. The service reads a files section
// only after an end marker that announces at most filesBound bytes, and
// parses it with a bound on every step (files.go), so no forgery makes it
// hold more than the caps. The end marker lets a run answer as soon as
// the program has ended, instead of when the container has exited (some 25
// ms later, the time runc takes to tear it down); a run without it (os._exit,
// a signal, the OOM killer, a kill at the deadline) is judged by the
// container's exit, as before, and has no files out. The ack tells a program that ran from a
// container that died before it got its program, which is retried.

// runnerProtocol is the version of the protocol: 6 is the protocol above
// (4's, unchanged) and the sessions of session_protocol.go (5's), over the
// attach connection or the runner's own sockets (socket.go). The image
// carries it in its imageProtocolLabel; Health refuses an image that speaks
// another (5's runner does not connect).
const runnerProtocol = "6"

// imageProtocolLabel is the image label that holds the runner's protocol
// version (set by images/python/recipe.sh).
const imageProtocolLabel = "io.sandboxd.runner"

// markerMagic starts the ack and the end marker.
const markerMagic = "\x00sandboxd:"

// tokenBytes is the size of a run's token, in random bytes (hex on the wire).
const tokenBytes = 16

// markerTail is the shape of an end marker after its prefix: 'd' stands
// for a decimal digit, anything else for itself. Fixed width, so a possible
// marker is recognised byte by byte while it streams in.
const markerTail = "ddd dddddddddd dddddddddd dddddddddd d\n"

// sessionMarkerTail is the shape of a session call's end marker
// (session_protocol.go): markerTail's fields, then the value's flag, its
// length and the interrupt's flag.
const sessionMarkerTail = "ddd dddddddddd dddddddddd dddddddddd d d dddddddddd d\n"

// endReport is what an end marker says about the program's end.
type endReport struct {
	// status is the exit status, 0..255.
	status int
	// cpuMS is the program's user plus system CPU time, in milliseconds.
	cpuMS int64
	// maxRSSKB is the program's peak resident memory, in KiB.
	maxRSSKB int64
	// filesLen is the length of the files section after the marker on stdout.
	filesLen int64
	// filesCut reports that the runner left a file out, or listed one
	// without its content, for the caps or the bounds of its walk.
	filesCut bool
	// A session call's marker only: value is 0 when the call had no
	// value (no last expression, or None), 1 when valueLen bytes of its
	// repr follow the files section, 2 when they are its repr cut at the
	// cap; interrupted reports that the runner's interrupt ended the call.
	value       int
	valueLen    int64
	interrupted bool
}

// sectionLen is the length of what follows the marker on stdout: the files
// section, then a session call's value.
func (r endReport) sectionLen() int64 {
	return r.filesLen + r.valueLen
}

// protocol holds one run's token and the lines made from it, and the caps
// on its files out.
type protocol struct {
	token string
	// maxFiles and maxFilesBytes are the caps on the files out (and in).
	maxFiles      int
	maxFilesBytes int64
	// prefix starts both the ack and the end marker: magic, token, colon.
	prefix []byte
	// ack is the whole ack line; lateAck its late form.
	ack, lateAck []byte
	// tail is the marker's shape after the prefix: markerTail, or
	// sessionMarkerTail for a session's call, whose value may be at most
	// maxValue bytes.
	tail     string
	maxValue int64
}

// newProtocol returns the protocol of one run, with a fresh token and the
// caps on its files out.
func newProtocol(maxFiles int, maxFilesBytes int64) *protocol {
	token := randomHex(tokenBytes)
	prefix := []byte(markerMagic + token + ":")
	return &protocol{token: token, prefix: prefix, ack: []byte(markerMagic + token + ":go\n"),
		lateAck:  []byte(markerMagic + token + ":gl\n"),
		maxFiles: maxFiles, maxFilesBytes: maxFilesBytes, tail: markerTail}
}

// message is what the runner reads on stdin: the header line, the code,
// the program's standard input, then its files in as records.
func (p *protocol) message(code, stdin string, files []sandboxd.File) []byte {
	size := 0
	for _, f := range files {
		size += recordSize(f.Name, len(f.Content))
	}
	b := make([]byte, 0, len(p.token)+100+len(code)+len(stdin)+size)
	b = append(b, p.token...)
	for _, n := range []int64{int64(len(code)), int64(len(stdin)), int64(len(files)), int64(size),
		int64(p.maxFiles), p.maxFilesBytes} {
		b = append(b, ' ')
		b = strconv.AppendInt(b, n, 10)
	}
	b = append(b, '\n')
	b = append(b, code...)
	b = append(b, stdin...)
	for _, f := range files {
		b = appendRecord(b, recordContent, f.Name, int64(len(f.Content)))
		b = append(b, f.Content...)
	}
	return b
}

// filesBound is the longest files section an end marker may announce: the
// caps' content and the framing of every record the runner may send.
func (p *protocol) filesBound() int64 {
	return p.maxFilesBytes + int64(p.maxFiles+listExtra)*(recordHeadMax+maxNameBytes)
}

// markerLen is the length of an end marker.
func (p *protocol) markerLen() int {
	return len(p.prefix) + len(p.tail)
}

// partialMarker reports whether b is the start of an end marker of this
// run's token (or a whole one), whatever status it will carry.
func (p *protocol) partialMarker(b []byte) bool {
	if len(b) > p.markerLen() {
		return false
	}
	for i, c := range b {
		switch {
		case i < len(p.prefix):
			if c != p.prefix[i] {
				return false
			}
		case p.tail[i-len(p.prefix)] == 'd':
			if c < '0' || c > '9' {
				return false
			}
		case c != p.tail[i-len(p.prefix)]:
			return false
		}
	}
	return true
}

// endReport reports whether b ends with a whole end marker of this run's
// token, and what it says: an exit status over 255, a files section longer
// than filesBound or a <t> other than 0 or 1 makes it no marker; so do, in
// a session call's marker, a value flag over 2, a value longer than
// maxValue (or one without its flag) and an interrupt flag over 1.
func (p *protocol) endReport(b []byte) (endReport, bool) {
	n := p.markerLen()
	if len(b) < n || !p.partialMarker(b[len(b)-n:]) {
		return endReport{}, false
	}
	var fields [8]int64
	f := 0
	for _, c := range b[len(b)-len(p.tail) : len(b)-1] {
		if c == ' ' {
			f++
			continue
		}
		fields[f] = 10*fields[f] + int64(c-'0')
	}
	if fields[0] > 255 || fields[3] > p.filesBound() || fields[4] > 1 {
		return endReport{}, false
	}
	if fields[5] > 2 || fields[6] > p.maxValue || (fields[5] == 0 && fields[6] > 0) || fields[7] > 1 {
		return endReport{}, false
	}
	return endReport{status: int(fields[0]), cpuMS: fields[1], maxRSSKB: fields[2],
		filesLen: fields[3], filesCut: fields[4] == 1,
		value: int(fields[5]), valueLen: fields[6], interrupted: fields[7] == 1}, true
}
