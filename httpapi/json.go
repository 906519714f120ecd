package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"sandboxd"
	"sandboxd/internal/jsonkeys"
)

// writeJSON answers v as JSON with the status. Every JSON answer says
// nosniff: a browser must never read one as a page, whatever a program
// printed into it.
func writeJSON(w http.ResponseWriter, status int, v any) { encodeJSON(w, status, v, false) }

// writeJSONEscaped answers v as JSON with <, > and & escaped (\u003c...):
// for errors, which echo what the caller sent (a path, a key), so that no
// answer carries markup a caller chose.
func writeJSONEscaped(w http.ResponseWriter, status int, v any) { encodeJSON(w, status, v, true) }

// encodeJSON is writeJSON and writeJSONEscaped.
func encodeJSON(w http.ResponseWriter, status int, v any, escapeHTML bool) {
	body, err := encodeBody(v, escapeHTML)
	if err != nil {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		http.Error(w, `{"error":"internal error; it has been logged"}`, http.StatusInternalServerError)
		return
	}
	writeBody(w, status, body)
}

// encodeBody is v's JSON as the answers write it: one line, with <, > and
// & escaped only when escapeHTML is set.
func encodeBody(v any, escapeHTML bool) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeBody answers body, JSON already encoded, with the status: as
// writeJSON does, byte for byte (a paid answer is rendered before its
// settlement, and a replay writes the stored bytes).
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// decodeObject decodes body into v unless a scan refused it for breaking
// lim (jsonkeys.Scan: too wide, too deep, a string too long, a key twice,
// a field lim.Fields does not take). The body must be exactly one JSON
// object with only known fields. v's fileContent values keep slices of
// body.
func decodeObject(body []byte, lim jsonkeys.Limits, v any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.decode",
			`request body is empty; send a JSON object such as {"language":"python","code":"print(1)"}`)
	}
	if trimmed[0] != '{' {
		return sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.decode",
			`request body must be a JSON object such as {"language":"python","code":"print(1)"}`)
	}
	e := jsonkeys.Scan(trimmed, lim)
	switch {
	case e != nil && e.Kind == jsonkeys.Unknown:
		known := fieldNames(v)
		if e.Path != "" {
			known = joinNames(e.Known)
		}
		return sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.decode",
			"request body is not valid JSON: unknown field %q; the fields are %s", e.Key, known)
	case e != nil && e.Kind == jsonkeys.Syntax && e.Offset >= len(trimmed):
		return sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.decode", "request body is not valid JSON: the JSON ends too early")
	case e != nil && e.Kind == jsonkeys.Syntax && e.Reason == jsonkeys.ReasonTrailing:
		return sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.decode", "request body has data after the JSON object")
	}
	if err := scanRefusal(e, "httpapi.decode", "request body"); err != nil {
		return err
	}
	if err := json.Unmarshal(trimmed, v); err != nil {
		return sandboxd.Wrap(sandboxd.CodeInvalid, "httpapi.decode", err, "request body is not valid JSON: "+describeJSONError(err, v))
	}
	return nil
}

// describeJSONError turns a decoding error into v's sentence for the caller.
func describeJSONError(err error, v any) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		return fmt.Sprintf("field %q must be %s, not %s", typeErr.Field, withArticle(jsonKind(typeErr.Type)), withArticle(typeErr.Value))
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("%s (at byte %d)", syntaxErr.Error(), syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends too early"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return strings.TrimPrefix(err.Error(), "json: ") + "; the fields are " + fieldNames(v)
	}
	return err.Error()
}

// jsonKind names the JSON type that decodes into t, as a caller reads it:
// "string", "number", "boolean", "array" or "object".
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	}
	return t.String()
}

// withArticle puts "a" or "an" before a JSON type's name.
func withArticle(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// fieldNames lists the JSON names of the fields of the struct v points to,
// as "a, b and c": the fields a request of that kind may have.
func fieldNames(v any) string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var names []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return joinNames(names)
}

// joinNames lists names as "a, b and c".
func joinNames(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
