package runnerproto

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ValidName says why name cannot be a file's name, or "" when it can:
// relative, "/" between parts, no empty, "." or ".." part, no control
// character or backslash, valid UTF-8, at most MaxNameBytes (MaxPartBytes
// a part). A name it takes stays inside the directory it is joined to.
// The reason is a clause for a caller's message ("the name is absolute;
// give a path relative to the working directory"), and tells how to mend
// the name where a rule allows it.
func ValidName(name string) string {
	switch {
	case name == "":
		return "the name is empty"
	case len(name) > MaxNameBytes:
		return fmt.Sprintf("the name is %d bytes, over the limit of %d", len(name), MaxNameBytes)
	case !utf8.ValidString(name):
		return "the name is not UTF-8"
	case strings.HasPrefix(name, "/"):
		return "the name is absolute; give a path relative to the working directory"
	case strings.Contains(name, `\`):
		return `the name has a backslash; separate directories with "/"`
	case strings.ContainsFunc(name, isControl):
		return "the name has a control character (NUL, newline, ...)"
	}
	for part := range strings.SplitSeq(name, "/") {
		switch {
		case part == "":
			return `the name has an empty part ("//" or a trailing "/")`
		case part == "." || part == "..":
			return `the name has a "." or ".." part`
		case len(part) > MaxPartBytes:
			return fmt.Sprintf("a part of the name is %d bytes, over the limit of %d", len(part), MaxPartBytes)
		}
	}
	return ""
}

// isControl reports whether r is a control character (Unicode's Cc: C0,
// DEL and C1), as unicode.IsControl says.
func isControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f)
}
