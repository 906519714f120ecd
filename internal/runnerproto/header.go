package runnerproto

// Header is the line that starts a one-shot run, or a call in a session:
// "<token> <n> <m> <f> <k> <maxfiles> <maxbytes> <language>\n", followed
// on the link by the Code bytes of the program, the Stdin bytes of its
// standard input and the FilesLen bytes of its Files files in, as records.
type Header struct {
	// Token is the run's token, 2*TokenBytes hex digits.
	Token string
	// Code, Stdin, Files and FilesLen are <n>, <m>, <f> and <k>: the
	// lengths of the program and its stdin, and the count and length of
	// the records of its files in.
	Code, Stdin, Files, FilesLen int64
	// MaxFiles and MaxFilesBytes are the caps on the files out.
	MaxFiles, MaxFilesBytes int64
	// Language is the canonical name of the program's language.
	Language string
}

// Append appends the header's line, its newline included, to b.
func (h Header) Append(b []byte) []byte {
	panic("not implemented: piece 1")
}

// ParseHeader parses a header's line, with or without its newline. It
// returns an error for anything that is not a header: a field missing or
// extra, a token not of 2*TokenBytes hex digits, a number not decimal
// digits or out of range, an empty language.
func ParseHeader(line []byte) (Header, error) {
	panic("not implemented: piece 1")
}

// SessionHeader is the line that switches a runner into its session loop:
// "S <token> <maxvalue> <language>\n". Each call of the session then
// starts with a Header of its own.
type SessionHeader struct {
	// Token is the loop's token, for the loop's ack.
	Token string
	// MaxValue is the cap on a call's value, in bytes.
	MaxValue int64
	// Language is the canonical name of the session's language.
	Language string
}

// Append appends the session header's line, its newline included, to b.
func (h SessionHeader) Append(b []byte) []byte {
	panic("not implemented: piece 1")
}

// ParseSessionHeader parses a session header's line, with or without its
// newline; an error for anything else.
func ParseSessionHeader(line []byte) (SessionHeader, error) {
	panic("not implemented: piece 1")
}
