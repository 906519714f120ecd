package interop

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// volatileKeys are the answer's fields whose values differ from run to run: any number
// matches the documented one.
var volatileKeys = map[string]bool{"duration_ms": true, "cpu_ms": true, "max_rss_kb": true}

// digits are the numbers of an MCP text block (times, sizes), compared as "N".
var digits = regexp.MustCompile(`[0-9]+`)

// todoDone is what testdata/todo.py writes to out/done.txt from testdata/todo.txt.
const todoDone = "[x] buy milk\n[x] write tests\n[x] ship\n"

// checkTodoAnswer checks the python-environment example: testdata/todo.py given
// testdata/todo.txt as notes/todo.txt returns out/done.txt alone (not the input it only
// read), as text, in the default environment.
func checkTodoAnswer(t *testing.T, body map[string]any, a dataAnswer) {
	t.Helper()
	want := map[string]any{"code": string(testdata(t, "todo.py")), "files": []fileIn{{Name: "notes/todo.txt",
		Content: base64.StdEncoding.EncodeToString(testdata(t, "todo.txt"))}}}
	if !jsonEqual(body, want) {
		t.Errorf("the python files request is not testdata/todo.py with testdata/todo.txt: %v", body)
	}
	if a.Status != "ok" || a.Stdout != "3 items\n" || a.Environment != "python" {
		t.Errorf("answer: status %q, stdout %q, environment %q, stderr %q", a.Status, a.Stdout, a.Environment, a.Stderr)
	}
	if a.FilesTruncated == nil || *a.FilesTruncated {
		t.Errorf("files_truncated %v, want present and false", a.FilesTruncated)
	}
	if len(a.Files) != 1 || a.Files[0].Name != "out/done.txt" || a.Files[0].Content == nil {
		t.Fatalf("files %+v, want out/done.txt alone, with its content", a.Files)
	}
	f := a.Files[0]
	got, err := base64.StdEncoding.DecodeString(*f.Content)
	if err != nil || string(got) != todoDone || f.Size != int64(len(todoDone)) || !strings.HasPrefix(f.MediaType, "text/plain") {
		t.Errorf("out/done.txt: content %q (%v), size %d, media_type %q; want %q, text/plain", got, err, f.Size, f.MediaType, todoDone)
	}
}

// matchJSON appends to diffs where got differs from want, the documented answer: the same
// keys and values, except that any number matches at volatileKeys, a string of want with
// "..." in it matches a string with the same ends (elided base64), and an MCP text block
// is compared with its numbers as "N".
func matchJSON(path, key string, want, got any, diffs *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: %.100v, want an object", path, got))
			return
		}
		for k, v := range w {
			if gv, ok := g[k]; ok {
				matchJSON(path+"."+k, k, v, gv, diffs)
			} else {
				*diffs = append(*diffs, fmt.Sprintf("%s.%s is missing", path, k))
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s.%s is not in the docs", path, k))
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s: %.100v, want %d elements", path, got, len(w)))
			return
		}
		for i := range w {
			matchJSON(fmt.Sprintf("%s[%d]", path, i), "", w[i], g[i], diffs)
		}
	default:
		if !matchScalar(key, want, got) {
			*diffs = append(*diffs, fmt.Sprintf("%s: %.100s, the docs say %.100s", path, asJSON(got), asJSON(want)))
		}
	}
}

// asJSON is v as JSON, for a message.
func asJSON(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// matchScalar is matchJSON for a value that is neither an object nor an array.
func matchScalar(key string, want, got any) bool {
	if _, isNum := want.(float64); isNum && volatileKeys[key] {
		_, ok := got.(float64)
		return ok
	}
	w, isStr := want.(string)
	g, ok := got.(string)
	switch {
	case !isStr:
		return want == got
	case !ok:
		return false
	case strings.Contains(w, "..."):
		head, tail, _ := strings.Cut(w, "...")
		return len(g) >= len(head)+len(tail) && strings.HasPrefix(g, head) && strings.HasSuffix(g, tail)
	case key == "text":
		return digits.ReplaceAllString(w, "N") == digits.ReplaceAllString(g, "N")
	}
	return w == g
}
