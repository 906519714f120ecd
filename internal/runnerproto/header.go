package runnerproto

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

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

// maxDigits is the most digits a number of a header or a record may have:
// 18 always fit in an int64.
const maxDigits = 18

// maxLanguageBytes is the longest language a header may name.
const maxLanguageBytes = 32

// HeaderMax is the longest header line, its newline included: a token,
// six numbers and a language, separated.
const HeaderMax = 2*TokenBytes + 6*(1+maxDigits) + 1 + maxLanguageBytes + 1

// Append appends the header's line, its newline included, to b. The
// fields are written as they are: the caller gives a header that
// ParseHeader would take back (numbers not negative, a canonical
// language).
func (h Header) Append(b []byte) []byte {
	b = append(b, h.Token...)
	for _, n := range []int64{h.Code, h.Stdin, h.Files, h.FilesLen, h.MaxFiles, h.MaxFilesBytes} {
		b = append(b, ' ')
		b = strconv.AppendInt(b, n, 10)
	}
	b = append(b, ' ')
	b = append(b, h.Language...)
	return append(b, '\n')
}

// ParseHeader parses a header's line, with or without its newline. It
// returns an error for anything that is not a header: a field missing or
// extra, a token not of 2*TokenBytes lower-case hex digits, a number not
// of 1 to 18 decimal digits or with a leading zero, a language empty, longer than 32 bytes or not
// of lower-case ASCII letters.
func ParseHeader(line []byte) (Header, error) {
	fields := bytes.Split(bytes.TrimSuffix(line, []byte("\n")), []byte(" "))
	if len(fields) != 8 {
		return Header{}, fmt.Errorf("runnerproto: a header has 8 fields, not %d", len(fields))
	}
	var nums [6]int64
	for i := range nums {
		n, ok := parseDigits(fields[1+i])
		if !ok {
			return Header{}, fmt.Errorf("runnerproto: header field %d is not a number", 2+i)
		}
		nums[i] = n
	}
	if err := checkToken(fields[0]); err != nil {
		return Header{}, err
	}
	if err := checkLanguage(fields[7]); err != nil {
		return Header{}, err
	}
	return Header{Token: string(fields[0]), Code: nums[0], Stdin: nums[1], Files: nums[2], FilesLen: nums[3],
		MaxFiles: nums[4], MaxFilesBytes: nums[5], Language: string(fields[7])}, nil
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

// Append appends the session header's line, its newline included, to b,
// as Header.Append does.
func (h SessionHeader) Append(b []byte) []byte {
	b = append(b, "S "...)
	b = append(b, h.Token...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, h.MaxValue, 10)
	b = append(b, ' ')
	b = append(b, h.Language...)
	return append(b, '\n')
}

// ParseSessionHeader parses a session header's line, with or without its
// newline; an error for anything else, by ParseHeader's rules.
func ParseSessionHeader(line []byte) (SessionHeader, error) {
	fields := bytes.Split(bytes.TrimSuffix(line, []byte("\n")), []byte(" "))
	if len(fields) != 4 || string(fields[0]) != "S" {
		return SessionHeader{}, errors.New(`runnerproto: a session header is "S <token> <maxvalue> <language>"`)
	}
	if err := checkToken(fields[1]); err != nil {
		return SessionHeader{}, err
	}
	maxValue, ok := parseDigits(fields[2])
	if !ok {
		return SessionHeader{}, errors.New("runnerproto: the session header's <maxvalue> is not a number")
	}
	if err := checkLanguage(fields[3]); err != nil {
		return SessionHeader{}, err
	}
	return SessionHeader{Token: string(fields[1]), MaxValue: maxValue, Language: string(fields[3])}, nil
}

// checkToken refuses a token that is not 2*TokenBytes lower-case hex
// digits.
func checkToken(b []byte) error {
	if len(b) != 2*TokenBytes || bytes.ContainsFunc(b, func(r rune) bool { return !isHexDigit(r) }) {
		return fmt.Errorf("runnerproto: the token is not %d lower-case hex digits", 2*TokenBytes)
	}
	return nil
}

// isHexDigit reports whether r is a lower-case hex digit.
func isHexDigit(r rune) bool {
	return ('0' <= r && r <= '9') || ('a' <= r && r <= 'f')
}

// checkLanguage refuses a language that is empty, longer than
// maxLanguageBytes or not all lower-case ASCII letters: no canonical name
// is, and none can then end a field or a line early.
func checkLanguage(b []byte) error {
	if len(b) == 0 || len(b) > maxLanguageBytes || bytes.ContainsFunc(b, func(r rune) bool { return r < 'a' || r > 'z' }) {
		return fmt.Errorf("runnerproto: the language is not 1 to %d lower-case letters", maxLanguageBytes)
	}
	return nil
}

// parseDigits reads 1 to maxDigits decimal digits, without a leading zero
// (but "0" itself): a number has one spelling, the one both ends write.
func parseDigits(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > maxDigits || (b[0] == '0' && len(b) > 1) {
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
