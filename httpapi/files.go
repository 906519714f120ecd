package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"unicode/utf8"

	"sandboxd"
	"sandboxd/internal/runnerproto"
)

// fileRequest is one file of a request's "files": its name and its content,
// standard base64 with padding.
type fileRequest struct {
	Name    *string      `json:"name"`
	Content *fileContent `json:"content"`
}

// fileContent is a file's content as sent, base64 text: when the JSON
// string holds no escape (base64 needs none), a slice of the request body
// itself, which is read once and never changed, so that an 8 MiB file is
// not copied into a string before it is decoded.
type fileContent []byte

// UnmarshalJSON takes the JSON string raw (as encoding/json hands it, a
// slice of the document Unmarshal was given).
func (c *fileContent) UnmarshalJSON(raw []byte) error {
	if len(raw) < 2 || raw[0] != '"' {
		return &json.UnmarshalTypeError{Value: jsonValueKind(raw), Type: reflect.TypeFor[string]()}
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		*c = raw[1 : len(raw)-1 : len(raw)-1]
		return nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return err
	}
	*c = fileContent(text)
	return nil
}

// jsonValueKind names the kind of the JSON value raw, as
// json.UnmarshalTypeError does.
func jsonValueKind(raw []byte) string {
	switch {
	case len(raw) == 0:
		return "value"
	case raw[0] == '{':
		return "object"
	case raw[0] == '[':
		return "array"
	case raw[0] == 't' || raw[0] == 'f':
		return "bool"
	}
	return "number"
}

// newFiles validates a request's files into the Job's, in the order the
// caller sent them: CodeTooLarge over maxFiles files or maxBytes decoded
// bytes in all (checked on the encoded lengths, before anything is
// decoded), CodeInvalid for a missing field, a bad name (checkFileName), a
// duplicate, a name that is another's directory, or bad base64. Every
// message names the file and the rule.
func newFiles(in []fileRequest, maxFiles int, maxBytes int64) ([]sandboxd.File, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if len(in) > maxFiles {
		return nil, sandboxd.Errorf(sandboxd.CodeTooLarge, "httpapi.files",
			"%d files sent, over the limit of %d files (max_files)", len(in), maxFiles)
	}
	names := make(map[string]bool, len(in))
	var total int64
	for i, f := range in {
		if err := checkFileRequest(i, f); err != nil {
			return nil, err
		}
		if names[*f.Name] {
			return nil, invalidFile(*f.Name, "appears more than once")
		}
		names[*f.Name] = true
		n, ok := decodedLen(*f.Content)
		if !ok {
			return nil, invalidFile(*f.Name, "content is not standard base64 with padding (its length is wrong)")
		}
		total += n
	}
	if total > maxBytes {
		return nil, sandboxd.Errorf(sandboxd.CodeTooLarge, "httpapi.files",
			"the files hold %d bytes in all (decoded), over the limit of %d bytes (max_files_bytes)", total, maxBytes)
	}
	for _, f := range in {
		if dir := parentIn(*f.Name, names); dir != "" {
			return nil, invalidFile(*f.Name, fmt.Sprintf("is inside %q, which is also sent as a file", dir))
		}
	}
	return decodeFiles(in)
}

// checkFileRequest checks that the i-th file has its two fields and a
// valid name.
func checkFileRequest(i int, f fileRequest) error {
	if f.Name == nil {
		return sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.files", `files[%d]: field "name" is missing`, i)
	}
	if err := checkFileName(*f.Name); err != nil {
		return err
	}
	if f.Content == nil {
		return invalidFile(*f.Name, `has no "content"; send its bytes as standard base64 ("" for an empty file)`)
	}
	return nil
}

// checkFileName refuses a name that runnerproto.ValidName refuses, the one
// rule the runner applies again: a name it accepts stays inside the
// directory it is joined to.
func checkFileName(name string) error {
	if why := runnerproto.ValidName(name); why != "" {
		return invalidFile(name, why)
	}
	return nil
}

// parentIn returns the first directory of name (shortest first) that names
// also holds as a file, or "".
func parentIn(name string, names map[string]bool) string {
	for i := range len(name) {
		if name[i] == '/' && names[name[:i]] {
			return name[:i]
		}
	}
	return ""
}

// decodedLen is the exact length of the bytes that s, standard base64 with
// padding, decodes to, counted without decoding (the decoder skips \r and
// \n, so wrapped base64 is counted as it decodes). It is false when the
// length cannot be that of padded base64.
func decodedLen(s []byte) (int64, bool) {
	n := int64(len(s)) - int64(bytes.Count(s, []byte("\n"))+bytes.Count(s, []byte("\r")))
	if n%4 != 0 {
		return 0, false
	}
	trimmed := bytes.TrimRight(bytes.TrimRight(s, "\r\n"), "=")
	pad := int64(len(bytes.TrimRight(s, "\r\n")) - len(trimmed))
	if pad > 2 {
		return 0, false
	}
	return n/4*3 - pad, true
}

// decodeFiles decodes the contents of files whose names and lengths were
// checked, each straight into a buffer of its exact decoded length.
func decodeFiles(in []fileRequest) ([]sandboxd.File, error) {
	out := make([]sandboxd.File, 0, len(in))
	for _, f := range in {
		n, _ := decodedLen(*f.Content)
		content := make([]byte, n)
		dec := base64.NewDecoder(base64.StdEncoding.Strict(), bytes.NewReader(*f.Content))
		_, err := io.ReadFull(dec, content)
		if err == nil {
			if extra, rerr := dec.Read(make([]byte, 1)); extra > 0 || rerr != io.EOF {
				err = fmt.Errorf("data after the padding")
				if rerr != nil && rerr != io.EOF {
					err = rerr
				}
			}
		}
		if err != nil {
			return nil, invalidFile(*f.Name, fmt.Sprintf("content is not standard base64 with padding (%v)", err))
		}
		out = append(out, sandboxd.File{Name: *f.Name, Content: content, Size: n})
	}
	return out, nil
}

// invalidFile is the CodeInvalid error of a file that breaks rule.
func invalidFile(name, rule string) error {
	return sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.files", "file %s: %s", quoteName(name), rule)
}

// quoteName quotes a caller's file name for a message, cut to a readable
// length.
func quoteName(name string) string {
	const most = 80
	if len(name) <= most {
		return fmt.Sprintf("%q", name)
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return fmt.Sprintf("%q... (%d bytes)", name[:cut], len(name))
}
