package runtime

import (
	"bytes"

	"sandboxd"
	"sandboxd/internal/runnerproto"
)

// The runner protocol (internal/runnerproto holds it, and its description):
// how the service and the image's runner talk over a container's link
// (link.go), its attach connection or the runner's own sockets. Here is
// the host's side of one run: its token, the lines made from it, and the
// caps that bound what the runner may send back.
//
// A program can read the token from its own process, so the most it can do
// with it is misreport its own result (and files): the container is killed
// and removed after every run either way. The service reads a files section
// only after an end marker that announces at most filesBound bytes, and
// parses it with a bound on every step (files.go).

// sectionLen is the length of what follows the marker on stdout: the files
// section, then a session call's value.
func sectionLen(r runnerproto.EndReport) int64 {
	return r.FilesLen + r.ValueLen
}

// headerLanguage is the canonical name a header carries for language (a
// job's, or a session's): python for "", as every caller before there were
// languages meant, else language itself, which must be canonical
// (sandboxd.NormalizeLanguage): a header carries nothing else, and the API
// canonicalizes every request's. Anything else is CodeInvalid for op.
func headerLanguage(op, language string) (string, error) {
	if language == "" {
		return sandboxd.LanguagePython, nil
	}
	if canonical, ok := sandboxd.NormalizeLanguage(language); !ok || canonical != language {
		return "", sandboxd.Errorf(sandboxd.CodeInvalid, op,
			"language %q is not a canonical name (%s, %s, %s, %s)", language, sandboxd.LanguagePython,
			sandboxd.LanguageJavaScript, sandboxd.LanguageTypeScript, sandboxd.LanguageBash)
	}
	return language, nil
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
	// session is set for a session's call, whose marker has
	// runnerproto.SessionMarkerTail's shape and whose value may be at most
	// maxValue bytes; tail is the marker's shape after the prefix.
	session  bool
	tail     string
	maxValue int64
}

// newProtocol returns the protocol of one run, with a fresh token and the
// caps on its files out.
func newProtocol(maxFiles int, maxFilesBytes int64) *protocol {
	token := randomHex(runnerproto.TokenBytes)
	prefix := runnerproto.Magic + token + ":"
	return &protocol{token: token, prefix: []byte(prefix), ack: []byte(prefix + runnerproto.AckGo + "\n"),
		lateAck:  []byte(prefix + runnerproto.AckLate + "\n"),
		maxFiles: maxFiles, maxFilesBytes: maxFilesBytes, tail: runnerproto.MarkerTail}
}

// message is what the runner reads on stdin: the header line, the code,
// the program's standard input, then its files in as records. language is
// a canonical name (headerLanguage).
func (p *protocol) message(language, code, stdin string, files []sandboxd.File) []byte {
	size := 0
	for _, f := range files {
		size += recordSize(f.Name, len(f.Content))
	}
	h := runnerproto.Header{Token: p.token, Code: int64(len(code)), Stdin: int64(len(stdin)),
		Files: int64(len(files)), FilesLen: int64(size), MaxFiles: int64(p.maxFiles), MaxFilesBytes: p.maxFilesBytes,
		Language: language}
	b := make([]byte, 0, runnerproto.HeaderMax+len(code)+len(stdin)+size)
	b = h.Append(b)
	b = append(b, code...)
	b = append(b, stdin...)
	for _, f := range files {
		b = runnerproto.AppendRecord(b, runnerproto.KindContent, f.Name, int64(len(f.Content)))
		b = append(b, f.Content...)
	}
	return b
}

// filesBound is the longest files section an end marker may announce: the
// caps' content and the framing of every record the runner may send.
func (p *protocol) filesBound() int64 {
	return p.maxFilesBytes + int64(p.maxFiles+runnerproto.ListExtra)*(runnerproto.RecordHeadMax+runnerproto.MaxNameBytes)
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
	n := min(len(b), len(p.prefix))
	return bytes.Equal(b[:n], p.prefix[:n]) && runnerproto.FitsShape(b[n:], p.tail)
}

// endReport reports whether b ends with a whole end marker of this run's
// token, and what it says: a marker runnerproto.ParseEndReport refuses,
// or one that announces a files section longer than filesBound or a value
// longer than maxValue, is no marker.
func (p *protocol) endReport(b []byte) (runnerproto.EndReport, bool) {
	n := p.markerLen()
	if len(b) < n || !bytes.Equal(b[len(b)-n:len(b)-len(p.tail)], p.prefix) {
		return runnerproto.EndReport{}, false
	}
	r, ok := runnerproto.ParseEndReport(b[len(b)-len(p.tail):], p.session)
	if !ok || r.FilesLen > p.filesBound() || r.ValueLen > p.maxValue {
		return runnerproto.EndReport{}, false
	}
	return r, true
}
