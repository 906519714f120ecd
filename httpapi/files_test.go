package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"sandboxd"
	"sandboxd/httpapi/wire"
)

// The file caps of newFilesServer.
const (
	testMaxFiles      = 3
	testMaxFilesBytes = 64
)

// newFilesServer is newTestServer with room for files, the caps above and
// two environments.
func newFilesServer(r *fakeRunner, g *fakeGate) *Server {
	s := newTestServer(r, g)
	s.MaxBodyBytes = 64 << 10
	s.MaxFiles, s.MaxFilesBytes = testMaxFiles, testMaxFilesBytes
	s.Environments = []sandboxd.Environment{
		{Name: "python", Description: "Standard library only.", Timeout: 5e9, MemoryBytes: 256 << 20, Price: "0.005",
			Languages: []string{sandboxd.LanguagePython}},
		{Name: "data", Description: "numpy, pandas, matplotlib.", Timeout: 10e9, MemoryBytes: 512 << 20, Price: "0.01",
			Languages: []string{sandboxd.LanguagePython}},
	}
	return s
}

// codeBody is a request body of code "x" with files (name, content pairs)
// and any extra fields.
func codeBody(t *testing.T, files []any, extra map[string]any) string {
	t.Helper()
	body := map[string]any{"code": "x"}
	if files != nil {
		body["files"] = files
	}
	for k, v := range extra {
		body[k] = v
	}
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// errorOf is the error message of an error answer, "" for any other.
func errorOf(t *testing.T, body []byte) string {
	t.Helper()
	var e struct{ Error string }
	_ = json.Unmarshal(body, &e)
	return e.Error
}

// file is one file of a request.
func file(name, content string) map[string]any {
	return map[string]any{"name": name, "content": content}
}

// b64 is s in standard base64.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestFilesAreValidated attacks each rule of a request's files; a refusal
// is a 400 or 413 naming the file (when it has a name) and the rule, and
// nothing runs.
func TestFilesAreValidated(t *testing.T) {
	long := strings.Repeat("p", 256)
	longName := strings.Repeat(strings.Repeat("n", 200)+"/", 5) + "abcdefghijklmnopqrstuvwxyz"
	cases := []struct {
		name   string
		files  []any
		status int
		want   []string
	}{
		{"empty name", []any{file("", b64("x"))}, 400, []string{`file ""`, "empty"}},
		{"absolute", []any{file("/etc/passwd", b64("x"))}, 400, []string{`"/etc/passwd"`, "absolute"}},
		{"dot dot", []any{file("../escape", b64("x"))}, 400, []string{`"../escape"`, `".."`}},
		{"dot dot inside", []any{file("a/../../b", b64("x"))}, 400, []string{`"a/../../b"`, `".."`}},
		{"only dot dot", []any{file("..", b64("x"))}, 400, []string{`".."`}},
		{"dot", []any{file("./a", b64("x"))}, 400, []string{`"./a"`, `"."`}},
		{"trailing slash", []any{file("dir/", b64("x"))}, 400, []string{`"dir/"`, "empty part"}},
		{"double slash", []any{file("a//b", b64("x"))}, 400, []string{`"a//b"`, "empty part"}},
		{"NUL", []any{file("a\x00b", b64("x"))}, 400, []string{`"a\x00b"`, "control character"}},
		{"newline", []any{file("a\nb", b64("x"))}, 400, []string{`"a\nb"`, "control character"}},
		{"DEL", []any{file("a\x7f", b64("x"))}, 400, []string{"control character"}},
		{"C1 control", []any{file("a\u0085", b64("x"))}, 400, []string{"control character"}},
		{"backslash", []any{file(`..\..\x`, b64("x"))}, 400, []string{"backslash"}},
		{"part over 255", []any{file("d/"+long, b64("x"))}, 400, []string{"256 bytes, over the limit of 255"}},
		{"name over 1024", []any{file(longName, b64("x"))}, 400, []string{"1031 bytes, over the limit of 1024", "... (1031 bytes)"}},
		{"duplicate", []any{file("a.csv", b64("x")), file("a.csv", b64("y"))}, 400, []string{`"a.csv"`, "more than once"}},
		{"file and its directory", []any{file("a", b64("x")), file("a/b", b64("y"))}, 400, []string{`"a/b"`, `inside "a"`}},
		{"directory, then the file", []any{file("a/b/c", b64("x")), file("a/b", b64("y"))}, 400, []string{`"a/b/c"`, `inside "a/b"`}},
		{"name missing", []any{map[string]any{"content": b64("x")}}, 400, []string{`files[0]: field "name" is missing`}},
		{"content missing", []any{map[string]any{"name": "a"}}, 400, []string{`file "a"`, `no "content"`}},
		{"content null", []any{map[string]any{"name": "a", "content": nil}}, 400, []string{`no "content"`}},
		{"name a number", []any{map[string]any{"name": 1, "content": ""}}, 400, []string{"must be a string"}},
		{"unknown file field", []any{map[string]any{"name": "a", "content": "", "mode": 0o777}}, 400, []string{`unknown field "mode"`}},
		{"file not an object", []any{"a.csv"}, 400, []string{`field "files" must be an object, not a string`}},
		{"bad base64 length", []any{file("a", "aGVsbG8")}, 400, []string{`file "a"`, "not standard base64"}},
		{"unpadded", []any{file("a", "aGk")}, 400, []string{"not standard base64"}},
		{"bad base64 byte", []any{file("a", "aGVsbG8*")}, 400, []string{"not standard base64", "illegal"}},
		{"url alphabet", []any{file("a", "-_-_")}, 400, []string{"not standard base64"}},
		{"data after padding", []any{file("a", "QQ==QQ==")}, 400, []string{"not standard base64"}},
		{"three pads", []any{file("a", "Q===")}, 400, []string{"not standard base64"}},
		{"padding bits set", []any{file("a", "aGl=")}, 400, []string{"not standard base64"}},
		{"too many files", []any{file("a", ""), file("b", ""), file("c", ""), file("d", "")}, 413, []string{`"files" holds more than 3 items (max_files)`}},
		{"too many bytes", []any{file("a", b64(strings.Repeat("x", 40))), file("b", b64(strings.Repeat("y", 25)))}, 413,
			[]string{"65 bytes", "limit of 64 bytes (max_files_bytes)"}},
		{"too many bytes, counted before decoding", []any{file("a", strings.Repeat("*", 4000))}, 413, []string{"max_files_bytes"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runner := &fakeRunner{}
			rec := do(t, newFilesServer(runner, &fakeGate{}).Handler(), "POST", "/v1/code", codeBody(t, tc.files, nil))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			msg := errorOf(t, rec.Body.Bytes())
			for _, want := range tc.want {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %q", msg, want)
				}
			}
			if runner.ran() != 0 {
				t.Errorf("ran %d times", runner.ran())
			}
		})
	}
}

// TestFilesReachTheJob: accepted files reach the runner decoded, in the
// caller's order, at the caps exactly; wrapped base64 and an empty file
// are accepted.
func TestFilesReachTheJob(t *testing.T) {
	runner := &fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusOK}}
	full := strings.Repeat("z", testMaxFilesBytes-6)
	files := []any{file("sales.csv", "aGVs\r\nbG8K"), file("dir/sub/é.txt", b64(full)), file("empty", "")}
	rec := do(t, newFilesServer(runner, &fakeGate{}).Handler(), "POST", "/v1/code", codeBody(t, files, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	got := runner.jobs[0].Files
	want := []sandboxd.File{{Name: "sales.csv", Content: []byte("hello\n"), Size: 6},
		{Name: "dir/sub/é.txt", Content: []byte(full), Size: int64(len(full))}, {Name: "empty", Content: []byte{}, Size: 0}}
	if len(got) != len(want) {
		t.Fatalf("job files %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Name != want[i].Name || string(got[i].Content) != string(want[i].Content) || got[i].Size != want[i].Size ||
			got[i].Content == nil {
			t.Errorf("file %d: %q %q %d, want %q %q %d", i, got[i].Name, got[i].Content, got[i].Size,
				want[i].Name, want[i].Content, want[i].Size)
		}
	}
	do(t, newFilesServer(runner, &fakeGate{}).Handler(), "POST", "/v1/code", `{"code":"x","files":[]}`)
	if runner.ran() != 2 || runner.jobs[1].Files != nil {
		t.Errorf("files [] gave the job %+v", runner.jobs[1].Files)
	}
}

// TestFilesRefusedWithoutCaps: a server without MaxFiles takes no files.
func TestFilesRefusedWithoutCaps(t *testing.T) {
	rec := do(t, newTestServer(&fakeRunner{}, &fakeGate{}).Handler(), "POST", "/v1/code", codeBody(t, []any{file("a", "")}, nil))
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "limit of 0 files") {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
}

// TestEnvironmentIsValidated: the environment defaults to python, is
// trimmed and lower-cased, reaches the job, the gate and the answer; an
// unknown one is a 400 listing the configured names.
func TestEnvironmentIsValidated(t *testing.T) {
	for _, tc := range []struct {
		body   string
		status int
		env    string
		want   string
	}{
		{`{"code":"x"}`, 200, "python", ""},
		{`{"code":"x","environment":null}`, 200, "python", ""},
		{`{"code":"x","environment":" DATA "}`, 200, "data", ""},
		{`{"code":"x","environment":"python"}`, 200, "python", ""},
		{`{"code":"x","environment":"ruby"}`, 400, "", `environment "ruby" is not configured; use one of: python, data`},
		{`{"code":"x","environment":"data\u0000"}`, 400, "", "use one of: python, data"},
		{`{"code":"x","environment":1}`, 400, "", `"environment" must be a string`},
		{`{"code":"x","environment":"data","Environment":"python"}`, 400, "", "more than once"},
	} {
		runner := &fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusOK}}
		gate := &fakeGate{}
		rec := do(t, newFilesServer(runner, gate).Handler(), "POST", "/v1/code", tc.body)
		if rec.Code != tc.status || !strings.Contains(errorOf(t, rec.Body.Bytes()), tc.want) {
			t.Errorf("%s: status %d %s; want %d with %q", tc.body, rec.Code, rec.Body, tc.status, tc.want)
			continue
		}
		if tc.status != 200 {
			if runner.ran() != 0 || gate.count(&gate.checked) != 0 {
				t.Errorf("%s: refused, yet ran %d times, checked %d", tc.body, runner.ran(), gate.checked)
			}
			continue
		}
		var got wire.CodeResponse
		_ = json.Unmarshal(rec.Body.Bytes(), &got)
		if runner.jobs[0].Environment != tc.env || gate.requests[0].Environment != tc.env || got.Environment != tc.env {
			t.Errorf("%s: job %q, gate %q, answer %q; want %q", tc.body, runner.jobs[0].Environment,
				gate.requests[0].Environment, got.Environment, tc.env)
		}
	}
	rec := do(t, newTestServer(&fakeRunner{}, &fakeGate{}).Handler(), "POST", "/v1/code", `{"code":"x","environment":"data"}`)
	if rec.Code != 400 || !strings.HasSuffix(errorOf(t, rec.Body.Bytes()), "use one of: python") {
		t.Errorf("no environments configured: %d %s, want python alone", rec.Code, rec.Body)
	}
}

// TestThe402QuotesTheEnvironment: an unpaid call in data reaches the gate
// with PaymentRequest.Environment "data", over HTTP and MCP, and nothing
// runs.
func TestThe402QuotesTheEnvironment(t *testing.T) {
	payErr := &sandboxd.Error{Code: sandboxd.CodePayment, Message: "payment required",
		Payment: termsDetails(map[string]any{"x402Version": 2, "error": "payment required"}, nil)}
	runner := &fakeRunner{}
	gate := &fakeGate{checkErr: payErr}
	api := newFilesServer(runner, gate)
	rec := do(t, api.Handler(), "POST", "/v1/code", `{"code":"x","environment":"data","files":[{"name":"a","content":""}]}`)
	if rec.Code != http.StatusPaymentRequired {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	res := callTool(t, mustMCP(t, api), map[string]any{"code": "x", "environment": "data"}, nil)
	if !res.IsError || structured(t, res)["x402Version"] != 2.0 {
		t.Fatalf("MCP: isError %v, %v", res.IsError, res.StructuredContent)
	}
	if len(gate.requests) != 2 || gate.requests[0].Environment != "data" || gate.requests[1].Environment != "data" {
		t.Errorf("the gate saw %+v, want environment data twice", gate.requests)
	}
	if runner.ran() != 0 {
		t.Errorf("ran %d times", runner.ran())
	}
}
