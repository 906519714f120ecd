package supervisor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"sandboxd/internal/runnerproto"
)

// maxLine bounds a header's line: a token, six numbers of at most 19
// digits and a language fit well within it.
const maxLine = 512

// request is a program or a session call, as the host sent it.
type request struct {
	header runnerproto.Header
	code   []byte
	stdin  []byte
	files  []runnerproto.Record
}

// errEnd is the end of the link: the host ended the session.
var errEnd = errors.New("supervisor: the link ended")

// readLine reads a line of at most maxLine bytes, its newline included;
// errEnd at the end of the link before any byte, an error for a line too
// long or cut short.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, errors.New("supervisor: a header line too long")
		}
		if err == nil {
			return line, nil
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(line) == 0 {
			return nil, errEnd
		}
		return nil, fmt.Errorf("supervisor: a header cut short: %w", err)
	}
}

// readRequest reads the parts that follow a program's header: the code,
// the stdin and the files in, each of the size the header gives.
func readRequest(r *bufio.Reader, line []byte) (*request, error) {
	h, err := runnerproto.ParseHeader(line)
	if err != nil {
		return nil, fmt.Errorf("supervisor: malformed header: %w", err)
	}
	req := &request{header: h}
	parts := []*[]byte{&req.code, &req.stdin, nil}
	sizes := []int64{h.Code, h.Stdin, h.FilesLen}
	var blob []byte
	parts[2] = &blob
	for i, p := range parts {
		// Grown as the bytes come, not allocated at the header's word.
		var b bytes.Buffer
		n, err := b.ReadFrom(io.LimitReader(r, sizes[i]))
		if err != nil || n != sizes[i] {
			return nil, fmt.Errorf("supervisor: the program cut short: %d of %d bytes, %v", n, sizes[i], err)
		}
		*p = b.Bytes()
	}
	req.files, err = runnerproto.ParseRecords(blob, int(h.Files))
	if err == nil && int64(len(req.files)) != h.Files {
		err = errors.New("fewer records than the header says")
	}
	for _, rec := range req.files {
		if err == nil && rec.Kind != runnerproto.KindContent {
			err = errors.New("a file in without its content")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("supervisor: malformed files: %w", err)
	}
	return req, nil
}

// isSession reports whether a first line is a session's header.
func isSession(line []byte) bool { return bytes.HasPrefix(line, []byte("S ")) }
