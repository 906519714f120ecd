package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"sandboxd"
	"sandboxd/internal/runnerproto"
)

// The limits of the fuzzed server: small, so the fuzzer reaches them.
const (
	fuzzMaxBody       = 1024
	fuzzMaxCode       = 64
	fuzzMaxFiles      = 3
	fuzzMaxFilesBytes = 100
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
		`{"code":"x","environment":"DATA"}`,
		`{"code":"x","environment":"gpu"}`,
		`{"code":"x","files":[{"name":"a/b.csv","content":"aGk="}]}`,
		`{"code":"x","files":[{"name":"a","content":""},{"name":"a/b","content":""}]}`,
		`{"code":"x","files":[{"name":"../x","content":"aGk="}]}`,
		`{"code":"x","files":[{"name":"x","content":"aGk=","name":"y"}]}`,
		`{"code":"x","files":[{"name":"x","content":"aGk"}]}`,
		`{"code":"x","files":[{"name":"x\u0000","content":""}]}`,
		`{"code":"x","files":[{"name":"x","content":"` + strings.Repeat("QUFB", 30) + `"}]}`,
	} {
		f.Add([]byte(seed))
	}
	s := &Server{MaxBodyBytes: fuzzMaxBody, MaxCodeBytes: fuzzMaxCode, MaxStdinBytes: fuzzMaxCode,
		MaxFiles: fuzzMaxFiles, MaxFilesBytes: fuzzMaxFilesBytes,
		Environments: []sandboxd.Environment{{Name: "python", Languages: []string{sandboxd.LanguagePython}}, {Name: "data", Languages: []string{sandboxd.LanguagePython}}}}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req codeRequest
		if err := decodeObject(body, s.requestLimits(requestShape), &req); err != nil {
			assertRefusal(t, "decodeObject", err)
		} else {
			assertOneObject(t, body)
		}
		r := httptest.NewRequest("POST", "/v1/code", bytes.NewReader(body))
		job, hold, err := s.parseJob(httptest.NewRecorder(), r)
		hold.Release()
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
		if job.Environment != "python" && job.Environment != "data" {
			t.Fatalf("parseJob accepted the environment %q", job.Environment)
		}
		assertFiles(t, job.Files)
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
		case strings.EqualFold(key, "environment"):
			seen["environment"]++
		case strings.EqualFold(key, "files"):
			seen["files"]++
		default:
			t.Fatalf("accepted an unknown field %q: %q", key, body)
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("accepted body, yet re-reading a value fails: %v", err)
		}
	}
	if seen["code"] > 1 || seen["language"] > 1 || seen["stdin"] > 1 || seen["environment"] > 1 || seen["files"] > 1 {
		t.Fatalf("accepted a field named twice: %q", body)
	}
}

// FuzzFileName feeds arbitrary names to checkFileName: a refusal is a 400
// naming the rule (which names runnerproto.ValidName takes is fuzzed there).
func FuzzFileName(f *testing.F) {
	for _, seed := range []string{"sales.csv", "a/b/c.txt", "", "/etc/passwd", "..", "../x", "a//b", `a\b`, "a\x00b",
		"\xff\xfe", strings.Repeat("x", 256), strings.Repeat("x/", 600)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := checkFileName(name)
		if (err == nil) != (runnerproto.ValidName(name) == "") {
			t.Fatalf("checkFileName(%q) = %v, against ValidName's %q", name, err, runnerproto.ValidName(name))
		}
		if err != nil {
			assertRefusal(t, "checkFileName", err)
			if sandboxd.ErrorCode(err) != sandboxd.CodeInvalid {
				t.Fatalf("checkFileName(%q): %v, want invalid", name, err)
			}
		}
	})
}

// FuzzFiles feeds arbitrary names and contents to newFiles, two files at
// a time. It never panics; it refuses with a 400 or 413; what it accepts
// holds assertFiles and decodes as the standard decoder decodes it.
func FuzzFiles(f *testing.F) {
	f.Add("a", "aGk=", "b", "")
	f.Add("a", "aGk=", "a/b", "")
	f.Add("a", "aGk", "b", "====")
	f.Add("a", "aG\nk=", "b", "QQ==QQ==")
	f.Add("a", strings.Repeat("A", 200), "b", "A===")
	f.Fuzz(func(t *testing.T, name1, content1, name2, content2 string) {
		c1, c2 := fileContent(content1), fileContent(content2)
		in := []fileRequest{{Name: &name1, Content: &c1}, {Name: &name2, Content: &c2}}
		files, err := newFiles(in, fuzzMaxFiles, fuzzMaxFilesBytes)
		if err != nil {
			assertRefusal(t, "newFiles", err)
			return
		}
		assertFiles(t, files)
		for i, c := range []string{content1, content2} {
			want, err := base64.StdEncoding.DecodeString(c)
			if err != nil || !bytes.Equal(want, files[i].Content) {
				t.Fatalf("accepted %q as %q; the standard decoder says %q, %v", c, files[i].Content, want, err)
			}
		}
	})
}

// assertFiles checks accepted files: within the caps, valid names, none
// twice, none inside another, sizes that are their contents' lengths.
func assertFiles(t *testing.T, files []sandboxd.File) {
	t.Helper()
	if len(files) > fuzzMaxFiles {
		t.Fatalf("accepted %d files", len(files))
	}
	var total int64
	for i, f := range files {
		if checkFileName(f.Name) != nil || f.Size != int64(len(f.Content)) || f.Content == nil {
			t.Fatalf("accepted the file %q (size %d, %d bytes)", f.Name, f.Size, len(f.Content))
		}
		total += f.Size
		for j, g := range files {
			if i != j && (f.Name == g.Name || strings.HasPrefix(g.Name, f.Name+"/")) {
				t.Fatalf("accepted %q beside %q", f.Name, g.Name)
			}
		}
	}
	if total > fuzzMaxFilesBytes {
		t.Fatalf("accepted %d bytes of files", total)
	}
}
