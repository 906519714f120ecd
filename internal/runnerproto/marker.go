package runnerproto

import "strconv"

// EndReport is what an end marker says about the end of a program or of a
// session call. A session call's fields are zero in a one-shot run's.
type EndReport struct {
	// Status is the exit status, 0..255.
	Status int
	// CPUMS is the program's user plus system CPU time, in milliseconds.
	CPUMS int64
	// MaxRSSKB is its peak resident memory, in KiB.
	MaxRSSKB int64
	// FilesLen is the length of the files section after the marker on
	// stdout.
	FilesLen int64
	// FilesCut reports that a file out was left out, or listed without its
	// content, for the caps or the bounds of the walk.
	FilesCut bool
	// Value is 0 when the call had no value, 1 when ValueLen bytes of it
	// follow the files section, 2 when they are the value cut at the cap.
	Value int
	// ValueLen is the length of the value after the files section.
	ValueLen int64
	// Interrupted reports that the interrupt at the call's timeout ended
	// the call.
	Interrupted bool
}

// maxField is the largest number a 10-digit field of a marker holds.
const maxField = 9_999_999_999

// Append appends the whole end marker of r for the token to b: Magic, the
// token, a colon, then the fields in MarkerTail's shape, or in
// SessionMarkerTail's when session is true. The marker is fixed width:
// a number that does not fit its field is written as the nearest that
// does (a status clamped to 0..255, a count to 0..9999999999, a flag to 0
// or 1, the value's flag to 0..2).
func (r EndReport) Append(b []byte, token string, session bool) []byte {
	b = append(b, Magic...)
	b = append(b, token...)
	b = append(b, ':')
	b = appendPadded(b, int64(r.Status), 3, 255)
	for _, n := range []int64{r.CPUMS, r.MaxRSSKB, r.FilesLen} {
		b = append(b, ' ')
		b = appendPadded(b, n, 10, maxField)
	}
	b = append(b, ' ', flag(r.FilesCut))
	if session {
		b = append(b, ' ')
		b = appendPadded(b, int64(r.Value), 1, 2)
		b = append(b, ' ')
		b = appendPadded(b, r.ValueLen, 10, maxField)
		b = append(b, ' ', flag(r.Interrupted))
	}
	return append(b, '\n')
}

// appendPadded appends n, clamped to 0..most, in width digits.
func appendPadded(b []byte, n int64, width int, most int64) []byte {
	n = min(max(n, 0), most)
	var digits [20]byte
	s := strconv.AppendInt(digits[:0], n, 10)
	for range width - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

// flag is a boolean as a marker writes it.
func flag(v bool) byte {
	if v {
		return '1'
	}
	return '0'
}

// ParseEndReport parses the tail of an end marker (what follows Magic, the
// token and the colon, its newline included) in MarkerTail's shape, or
// SessionMarkerTail's when session is true. It reports false for a tail of
// another shape, a status over 255, a flag out of its range, or a value
// length without its flag; the caps a run sets (the files section's bound,
// the value's cap) are the caller's to check.
func ParseEndReport(tail []byte, session bool) (EndReport, bool) {
	shape := MarkerTail
	if session {
		shape = SessionMarkerTail
	}
	if !FitsShape(tail, shape) || len(tail) != len(shape) {
		return EndReport{}, false
	}
	var fields [8]int64
	f := 0
	for _, c := range tail[:len(tail)-1] {
		if c == ' ' {
			f++
			continue
		}
		fields[f] = 10*fields[f] + int64(c-'0')
	}
	if fields[0] > 255 || fields[4] > 1 || fields[5] > 2 || (fields[5] == 0 && fields[6] > 0) || fields[7] > 1 {
		return EndReport{}, false
	}
	return EndReport{Status: int(fields[0]), CPUMS: fields[1], MaxRSSKB: fields[2], FilesLen: fields[3],
		FilesCut: fields[4] == 1, Value: int(fields[5]), ValueLen: fields[6], Interrupted: fields[7] == 1}, true
}

// FitsShape reports whether b is the start of a marker's tail of shape
// (MarkerTail or SessionMarkerTail), or a whole one: 'd' in the shape
// stands for a decimal digit, anything else for itself. A reader that
// holds output back while it may still become a marker asks it byte by
// byte as the output streams in.
func FitsShape(b []byte, shape string) bool {
	if len(b) > len(shape) {
		return false
	}
	for i, c := range b {
		switch {
		case shape[i] == 'd':
			if c < '0' || c > '9' {
				return false
			}
		case c != shape[i]:
			return false
		}
	}
	return true
}
