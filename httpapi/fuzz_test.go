package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"sandboxd"
)

// The limits of the fuzzed server: small, so the fuzzer reaches them.
const (
	fuzzMaxBody = 1024
	fuzzMaxCode = 64
)

// FuzzDecodeObject feeds arbitrary bodies to the request decoder and to the
// whole parse of POST /v1/code. Neither may panic; every refusal is an
// *sandboxd.Error with CodeInvalid or CodeTooLarge (a 400 or a 413, never a
// 500); every acceptance is one JSON object naming each known field at most
// once and no other, and a job within the limits.
func FuzzDecodeObject(f *testing.F) {
	for _, seed := range []string{
		`{"language":"python","code":"print(1)"}`,
		`{"code":"print(1)"}`,
		` 	{"code":"x"}` + "\n",
		`{"language":"python3","code":"print('h\u00e9')"}`,
		`{"language":"PYTHON ","code":"1"}`,
		`{"language":"ruby","code":"puts 1"}`,
		`{"code":""}`,
		`{"code":"   "}`,
		`{"code":null}`,
		`{"code":1}`,
		`{"code":["a"]}`,
		`{"code":"a","code":"b"}`,
		`{"code":"a","CODE":"b"}`,
		`{"code":"a","\u0063ode":"b"}`,
		`{"code":"a","extra":1}`,
		`{"code":"a","stdin":"b\n"}`,
		`{"code":"a","stdin":"` + strings.Repeat("y", fuzzMaxCode+1) + `"}`,
		`{"code":"a"} {"code":"b"}`,
		`{"code":"a"}garbage`,
		`{"code":"` + strings.Repeat("x", fuzzMaxCode+1) + `"}`,
		`{"code":"\ud800"}`,
		"{\"code\":\"\xff\xfe\"}",
		"\xef\xbb\xbf{\"code\":\"1\"}",
		"\u00a0{\"code\":\"1\"}",
		`[{"code":"1"}]`,
		`"code"`,
		`null`,
		``,
		`{`,
		`{"code":"a",}`,
		`{"code":"a"`,
		`{"language":{"nested":[1,2,{"deep":true}]},"code":"x"}`,
		`{"language":1e999,"code":"x"}`,
		strings.Repeat("[", 10000),
		`{"a":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`,
	} {
		f.Add([]byte(seed))
	}
	s := &Server{MaxBodyBytes: fuzzMaxBody, MaxCodeBytes: fuzzMaxCode, MaxStdinBytes: fuzzMaxCode}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req codeRequest
		if err := decodeObject(body, &req); err != nil {
			assertRefusal(t, "decodeObject", err)
		} else {
			assertOneObject(t, body)
		}
		r := httptest.NewRequest("POST", "/v1/code", bytes.NewReader(body))
		job, err := s.parseJob(r)
		if err != nil {
			assertRefusal(t, "parseJob", err)
			return
		}
		if job.Language != sandboxd.LanguagePython || strings.TrimSpace(job.Code) == "" ||
			len(job.Code) > fuzzMaxCode || len(job.Stdin) > fuzzMaxCode || job.ID == "" {
			t.Fatalf("parseJob accepted a job out of bounds: %+v", job)
		}
		if !utf8.ValidString(job.Code) {
			t.Fatalf("parseJob accepted code that is not UTF-8: %q", job.Code)
		}
	})
}

// assertRefusal fails unless err is a caller's error: 400 or 413.
func assertRefusal(t *testing.T, op string, err error) {
	t.Helper()
	var e *sandboxd.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error %T (%v) is not an *sandboxd.Error", op, err, err)
	}
	if e.Code != sandboxd.CodeInvalid && e.Code != sandboxd.CodeTooLarge {
		t.Fatalf("%s: error code %q (%v), want invalid or too_large", op, e.Code, err)
	}
	if e.Message == "" {
		t.Fatalf("%s: error without a message for the caller: %v", op, err)
	}
}

// assertOneObject checks an accepted body independently of the decoder: it
// is one valid JSON object whose keys are the known fields (matched as the
// decoder matches them, ignoring case), each at most once.
func assertOneObject(t *testing.T, body []byte) {
	t.Helper()
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) {
		t.Fatalf("accepted a body that is not valid JSON: %q", body)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("accepted a body that is not an object: %q", body)
	}
	seen := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("accepted body, yet re-reading it fails: %v", err)
		}
		key, _ := tok.(string)
		switch {
		case strings.EqualFold(key, "code"):
			seen["code"]++
		case strings.EqualFold(key, "language"):
			seen["language"]++
		case strings.EqualFold(key, "stdin"):
			seen["stdin"]++
		default:
			t.Fatalf("accepted an unknown field %q: %q", key, body)
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("accepted body, yet re-reading a value fails: %v", err)
		}
	}
	if seen["code"] > 1 || seen["language"] > 1 || seen["stdin"] > 1 {
		t.Fatalf("accepted a field named twice: %q", body)
	}
}
