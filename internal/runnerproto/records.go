package runnerproto

import (
	"bytes"
	"fmt"
	"strconv"
)

// Record is one file of a files section, in or out: a header
// "<kind> <namelen> <size>\n", the name, then, for KindContent, the size
// bytes of the file.
type Record struct {
	// Kind is KindContent or KindListed.
	Kind byte
	// Name is the file's name, valid by ValidName.
	Name string
	// Size is the file's size in bytes.
	Size int64
	// Content is the file's bytes, a slice of the section; nil for
	// KindListed.
	Content []byte
}

// RecordHeadMax is the longest record header: kind, name length and size
// (at most 18 digits each), separated, and its newline.
const RecordHeadMax = 32

// AppendRecord appends a record's header and name to b; the content of a
// KindContent record, size bytes, follows it.
func AppendRecord(b []byte, kind byte, name string, size int64) []byte {
	b = append(b, kind, ' ')
	b = strconv.AppendInt(b, int64(len(name)), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, size, 10)
	b = append(b, '\n')
	return append(b, name...)
}

// ParseRecords parses a whole files section of at most count records,
// bounded at every step. It returns an error for a section that does not
// parse: a header malformed or longer than its bound, a kind unknown, a
// name ValidName refuses, a content past the section's end, or more than
// count records. The caps on content and the order of the names are the
// caller's to check.
func ParseRecords(section []byte, count int) ([]Record, error) {
	var out []Record
	for len(section) > 0 {
		if len(out) >= count {
			return nil, fmt.Errorf("runnerproto: over %d records", count)
		}
		r, rest, err := parseRecord(section)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
		section = rest
	}
	return out, nil
}

// parseRecord reads one record off b, and returns the rest of b.
func parseRecord(b []byte) (Record, []byte, error) {
	nl := bytes.IndexByte(b[:min(len(b), RecordHeadMax)], '\n')
	if nl < 0 {
		return Record{}, nil, fmt.Errorf("runnerproto: no record header in %d bytes", RecordHeadMax)
	}
	head := b[:nl]
	fields := bytes.Split(head, []byte(" "))
	if len(fields) != 3 || len(fields[0]) != 1 || (fields[0][0] != KindContent && fields[0][0] != KindListed) {
		return Record{}, nil, fmt.Errorf("runnerproto: bad record header %q", head)
	}
	nameLen, ok1 := parseDigits(fields[1])
	size, ok2 := parseDigits(fields[2])
	rest := b[nl+1:]
	if !ok1 || !ok2 || nameLen > MaxNameBytes || nameLen > int64(len(rest)) {
		return Record{}, nil, fmt.Errorf("runnerproto: bad record header %q", head)
	}
	r := Record{Kind: fields[0][0], Name: string(rest[:nameLen]), Size: size}
	if why := ValidName(r.Name); why != "" {
		return Record{}, nil, fmt.Errorf("runnerproto: file %q: %s", r.Name, why)
	}
	rest = rest[nameLen:]
	if r.Kind == KindContent {
		if size > int64(len(rest)) {
			return Record{}, nil, fmt.Errorf("runnerproto: file %q: %d bytes past the section's end", r.Name, size)
		}
		r.Content, rest = rest[:size:size], rest[size:]
	}
	return r, rest, nil
}
