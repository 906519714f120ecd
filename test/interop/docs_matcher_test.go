package interop

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestDocsAnswerMatching: the check of the documentation's answers lets through only what
// changes from run to run (times, elided base64 by its ends, numbers in an MCP text) and
// catches anything else: another value, a field missing or added, a file more.
func TestDocsAnswerMatching(t *testing.T) {
	readme := `{"stdout":"42\n","duration_ms":5,"files":[{"name":"a.png","content":"iVBOR...ggg=="}],
		"content":[{"type":"text","text":"status ok, 12 ms"}]}`
	cases := []struct {
		got  string
		errs int
	}{
		{`{"stdout":"42\n","duration_ms":917,"files":[{"name":"a.png","content":"iVBORw0KGgoAAAggg=="}],
			"content":[{"type":"text","text":"status ok, 7 ms"}]}`, 0},
		{`{"stdout":"43\n","duration_ms":5,"files":[{"name":"a.png","content":"iVBORw0KGgoAAAggg=="}],
			"content":[{"type":"text","text":"status ok, 12 ms"}]}`, 1},
		{`{"stdout":"42\n","duration_ms":5,"files":[{"name":"a.png","content":"AAAAiVBORggg=="}],
			"content":[{"type":"text","text":"status error, 12 ms"}]}`, 2},
		{`{"stdout":"42\n","duration_ms":5,"extra":1,"files":[{"name":"a.png","content":"iVBORggg=="},{"name":"b"}],
			"content":[{"type":"text","text":"status ok, 12 ms"}]}`, 2},
		{`{"duration_ms":"5","files":[{"name":"a.png","content":"iVBORggg=="}],"content":[]}`, 3},
	}
	var want any
	if err := json.Unmarshal([]byte(readme), &want); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		var got any
		if err := json.Unmarshal([]byte(c.got), &got); err != nil {
			t.Fatal(err)
		}
		var diffs []string
		matchJSON("", "", want, got, &diffs)
		if len(diffs) != c.errs {
			t.Errorf("case %d: %d differences %q, want %d", i, len(diffs), diffs, c.errs)
		}
	}
}

// TestDocsShellWords: a documented command splits as sh splits it, and one that sh
// would read otherwise (double quotes, a variable, a pipe) is not run as if it were plain.
func TestDocsShellWords(t *testing.T) {
	got := shellWords(t, `curl -s localhost:8080/v1/code -d '{"code":"print(\"a b\")"}'`)
	want := []string{"curl", "-s", "localhost:8080/v1/code", "-d", `{"code":"print(\"a b\")"}`}
	if !slices.Equal(got, want) {
		t.Errorf("split %q, want %q", got, want)
	}
	for _, line := range []string{`curl -d "$X"`, `curl x | jq`, `curl -d '{`} {
		rec := &fatalRecorder{TB: t}
		func() {
			defer func() { _ = recover() }()
			shellWords(rec, line)
		}()
		if !rec.failed {
			t.Errorf("%q was split without complaint", line)
		}
	}
}

// TestDocsExampleParsing: a checked example is read as a shell would read it, over the
// lines it spans (an open single quote, a trailing backslash), with an answer over several
// lines; an example that shows no answer, or an answer that is not JSON, fails the test.
func TestDocsExampleParsing(t *testing.T) {
	page := "text\n```sh\n$ curl -s localhost:8080/mcp -H 'A: b' \\\n    -d '{\"code\":\n \"print(1)\"}'\n" +
		"{\"stdout\":\"1\\n\",\n \"status\":\"ok\"}\n\n$ curl -s localhost:8080/v1/health\n{\"status\":\"ok\"}\n```\n"
	got := parseDocExamples(t, "page.md", page)
	if len(got) != 2 {
		t.Fatalf("%d examples, want 2", len(got))
	}
	wantArgs := []string{"-s", "localhost:8080/mcp", "-H", "A: b", "-d", "{\"code\":\n \"print(1)\"}"}
	if !slices.Equal(got[0].args, wantArgs) || got[0].line != 3 {
		t.Errorf("first example: line %d, args %q; want line 3, %q", got[0].line, got[0].args, wantArgs)
	}
	if !jsonEqual(got[0].answer, map[string]any{"stdout": "1\n", "status": "ok"}) || got[1].line != 9 {
		t.Errorf("answers: %v (line %d of the second)", got[0].answer, got[1].line)
	}
	for _, bad := range []string{"$ curl -s localhost:8080/v1/health\n\n", "$ curl -s localhost:8080/v1/health\nstatus ok\n"} {
		rec := &fatalRecorder{TB: t}
		func() {
			defer func() { _ = recover() }()
			parseDocExamples(rec, "page.md", bad)
		}()
		if !rec.failed {
			t.Errorf("%q was read without complaint", bad)
		}
	}
}

// fatalRecorder is a testing.TB whose Fatalf is recorded and ends the call by a panic
// instead of failing the test, to check a check.
type fatalRecorder struct {
	testing.TB
	failed bool
}

// Fatalf records the failure and panics, as Fatalf stops the caller.
func (r *fatalRecorder) Fatalf(string, ...any) {
	r.failed = true
	panic("fatal")
}

// Helper does nothing.
func (r *fatalRecorder) Helper() {}
