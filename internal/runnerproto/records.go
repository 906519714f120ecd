package runnerproto

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

// AppendRecord appends a record's header and name to b; the content of a
// KindContent record, size bytes, follows it.
func AppendRecord(b []byte, kind byte, name string, size int64) []byte {
	panic("not implemented: piece 1")
}

// ParseRecords parses a whole files section of at most count records,
// bounded at every step. It returns an error for a section that does not
// parse: a header malformed or longer than its bound, a kind unknown, a
// name ValidName refuses, a content past the section's end, or more than
// count records. The caps on content and the order of the names are the
// caller's to check.
func ParseRecords(section []byte, count int) ([]Record, error) {
	panic("not implemented: piece 1")
}

// ValidName says why name cannot be a file's name, or "" when it can:
// relative, "/" between parts, no empty, "." or ".." part, no control
// character or backslash, valid UTF-8, at most MaxNameBytes (MaxPartBytes
// a part).
func ValidName(name string) string {
	panic("not implemented: piece 1")
}
