package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"sandboxd"
)

// The files of a run travel as records (protocol.go): the files in after
// the program's standard input on stdin, the files out in the files section
// after the end marker on stdout.

// The kinds of record.
const (
	// recordContent is a file with its content.
	recordContent = 'c'
	// recordListed is a file out listed by name and size, over the caps.
	recordListed = 'l'
)

// Bounds of the files section, shared with the runner (run.py holds the
// same numbers).
const (
	// listExtra is the most files out the runner lists without content
	// past the max_files it sends with content.
	listExtra = 64
	// maxNameBytes is the longest name of a file, in or out.
	maxNameBytes = 1024
	// maxPartBytes is the longest part of a name (NAME_MAX).
	maxPartBytes = 255
	// recordHeadMax is the longest record header: kind, name length and
	// size (at most 20 digits), separated, and its newline.
	recordHeadMax = 32
	// maxSizeDigits is the most digits a size may have: 18 fit in an int64.
	maxSizeDigits = 18
)

// errFiles is the error of a files section that does not parse; the run's
// answer then has no files and FilesTruncated set.
var errFiles = errors.New("runtime: malformed files section")

// recordSize is the length of a record of kind "c" for a file.
func recordSize(name string, size int) int {
	return len(appendRecord(nil, recordContent, name, int64(size))) + size
}

// appendRecord appends a record's header and name (its content, if any,
// follows) to b.
func appendRecord(b []byte, kind byte, name string, size int64) []byte {
	b = append(b, kind, ' ')
	b = strconv.AppendInt(b, int64(len(name)), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, size, 10)
	b = append(b, '\n')
	return append(b, name...)
}

// validName reports why name cannot be a file's name, or "" when it can:
// relative, "/" between parts, no empty, "." or ".." part, no control
// character or backslash, valid UTF-8, at most maxNameBytes (maxPartBytes
// a part). The runner checks the same before writing a file in, and before
// returning a file out.
func validName(name string) string {
	switch {
	case name == "":
		return "is empty"
	case len(name) > maxNameBytes:
		return fmt.Sprintf("is longer than %d bytes", maxNameBytes)
	case !utf8.ValidString(name):
		return "is not UTF-8"
	case strings.HasPrefix(name, "/"):
		return "is absolute"
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }):
		return "holds a control character"
	case strings.ContainsRune(name, '\\'):
		return "holds a backslash"
	}
	for part := range strings.SplitSeq(name, "/") {
		switch {
		case part == "" || part == "." || part == "..":
			return fmt.Sprintf("has a part %q", part)
		case len(part) > maxPartBytes:
			return fmt.Sprintf("has a part longer than %d bytes", maxPartBytes)
		}
	}
	return ""
}

// checkFilesIn checks a job's files in against the caps and the naming
// rules once more (the API has validated them; the runner checks the names
// again), so no caller can hand the runner more than the caps.
func checkFilesIn(files []sandboxd.File, maxFiles int, maxBytes int64) error {
	if len(files) > maxFiles {
		return sandboxd.Errorf(sandboxd.CodeTooLarge, "runtime.run", "%d files in, over runtime.max_files (%d)", len(files), maxFiles)
	}
	var total int64
	for _, f := range files {
		if why := validName(f.Name); why != "" {
			return sandboxd.Errorf(sandboxd.CodeInvalid, "runtime.run", "file name %q %s", f.Name, why)
		}
		total += int64(len(f.Content))
	}
	if total > maxBytes {
		return sandboxd.Errorf(sandboxd.CodeTooLarge, "runtime.run", "%d bytes of files in, over runtime.max_files_bytes (%d)", total, maxBytes)
	}
	return nil
}

// parseFiles reads the files out from a files section, with a bound on
// every step: at most maxFiles files with content, maxBytes bytes of it in
// all, maxFiles+listExtra records, names valid and strictly in order (so
// none twice). The contents are slices of b. listed reports a file listed
// without content. Anything else is errFiles: a section the runner did not
// write (a program can forge one) is ignored, never trusted further.
func parseFiles(b []byte, maxFiles int, maxBytes int64) (files []sandboxd.File, listed bool, err error) {
	var used int64
	kept, prev := 0, ""
	for len(b) > 0 {
		if len(files) >= maxFiles+listExtra {
			return nil, false, fmt.Errorf("%w: over %d records", errFiles, maxFiles+listExtra)
		}
		kind, name, size, rest, err := parseRecordHead(b)
		if err != nil {
			return nil, false, err
		}
		if name <= prev { // valid names are never empty
			return nil, false, fmt.Errorf("%w: %q after %q, out of order", errFiles, name, prev)
		}
		f := sandboxd.File{Name: name, Size: size}
		if kind == recordContent {
			if kept >= maxFiles || size > maxBytes-used || size > int64(len(rest)) {
				return nil, false, fmt.Errorf("%w: %q over the caps or the section", errFiles, name)
			}
			f.Content = rest[:size:size]
			rest = rest[size:]
			used += size
			kept++
		} else {
			listed = true
		}
		f.MediaType = mediaType(name, f.Content)
		files = append(files, f)
		prev, b = name, rest
	}
	return files, listed, nil
}

// parseRecordHead reads one record's header and name off b, and returns
// the rest of b (the content, for kind "c", comes first in it).
func parseRecordHead(b []byte) (kind byte, name string, size int64, rest []byte, err error) {
	nl := bytes.IndexByte(b[:min(len(b), recordHeadMax)], '\n')
	if nl < 0 {
		return 0, "", 0, nil, fmt.Errorf("%w: no record header", errFiles)
	}
	fields := bytes.Split(b[:nl], []byte(" "))
	if len(fields) != 3 || len(fields[0]) != 1 || (fields[0][0] != recordContent && fields[0][0] != recordListed) {
		return 0, "", 0, nil, fmt.Errorf("%w: bad record header %q", errFiles, b[:nl])
	}
	nameLen, ok1 := parseDigits(fields[1])
	size, ok2 := parseDigits(fields[2])
	rest = b[nl+1:]
	if !ok1 || !ok2 || nameLen > maxNameBytes || nameLen > int64(len(rest)) {
		return 0, "", 0, nil, fmt.Errorf("%w: bad record header %q", errFiles, b[:nl])
	}
	name = string(rest[:nameLen])
	if why := validName(name); why != "" {
		return 0, "", 0, nil, fmt.Errorf("%w: file name %q %s", errFiles, name, why)
	}
	return fields[0][0], name, size, rest[nameLen:], nil
}

// parseDigits reads 1 to maxSizeDigits decimal digits.
func parseDigits(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > maxSizeDigits {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = 10*n + int64(c-'0')
	}
	return n, true
}
