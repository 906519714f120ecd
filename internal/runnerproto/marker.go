package runnerproto

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

// Append appends the whole end marker of r for the token to b: Magic, the
// token, a colon, then the fields in MarkerTail's shape, or in
// SessionMarkerTail's when session is true.
func (r EndReport) Append(b []byte, token string, session bool) []byte {
	panic("not implemented: piece 1")
}

// ParseEndReport parses the tail of an end marker (what follows Magic, the
// token and the colon, its newline included) in MarkerTail's shape, or
// SessionMarkerTail's when session is true. It reports false for a tail of
// another shape, a status over 255, a flag out of its range, or a value
// length without its flag; the caps a run sets (the files section's bound,
// the value's cap) are the caller's to check.
func ParseEndReport(tail []byte, session bool) (EndReport, bool) {
	panic("not implemented: piece 1")
}
