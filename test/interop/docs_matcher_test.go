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
