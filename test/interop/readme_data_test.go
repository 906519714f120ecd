package interop

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeSection is the README section whose examples testREADMEExamples runs.
const readmeSection = "## Data work"

// readmeHost is the address the README's examples call (`make run` serves there).
const readmeHost = "localhost:8080"

// volatileKeys are the answer's fields whose values differ from run to run: any number
// matches the README's.
var volatileKeys = map[string]bool{"duration_ms": true, "cpu_ms": true, "max_rss_kb": true}

// digits are the numbers of an MCP text block (times, sizes), compared as "N".
var digits = regexp.MustCompile(`[0-9]+`)

// readmeExample is one "$ curl ..." line of the README's data section and the answer
// shown under it.
type readmeExample struct {
	line   string   // as written, for messages
	args   []string // curl's arguments, split as a shell splits them
	answer any      // the answer shown, decoded
}

// readmeExamples reads the "$ curl" lines of the README's data section and the JSON
// answer under each (the lines up to a blank line, the next "$ " or the fence).
func readmeExamples(t testing.TB) []readmeExample {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(interopDir, "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n"+readmeSection+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", readmeSection)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	lines := strings.Split(section, "\n")
	var out []readmeExample
	for i := 0; i < len(lines); i++ {
		cmd, ok := strings.CutPrefix(lines[i], "$ curl ")
		if !ok {
			continue
		}
		var answer []string
		for i+1 < len(lines) && lines[i+1] != "" && !strings.HasPrefix(lines[i+1], "$ ") && !strings.HasPrefix(lines[i+1], "```") {
			i++
			answer = append(answer, lines[i])
		}
		ex := readmeExample{line: lines[i-len(answer)], args: shellWords(t, cmd)}
		if err := json.Unmarshal([]byte(strings.Join(answer, "\n")), &ex.answer); err != nil {
			t.Fatalf("README: the answer under %.120q is not JSON: %v", ex.line, err)
		}
		out = append(out, ex)
	}
	return out
}

// shellWords splits a command line as sh does, for the README's simple lines: words
// between spaces, single quotes taken literally; anything else a shell would interpret
// fails the test (the README's commands must run as written).
func shellWords(t testing.TB, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case quoted:
			cur.WriteRune(r)
		case r == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune("\"\\$`|&;<>(){}*?#~", r):
			t.Fatalf("README: %q in %.120q outside single quotes", r, line)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("README: an unclosed quote in %.120q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// testREADMEExamples runs each curl line of the README's data section against svc, as
// written but for the address and each once the warm pools are full, checks that the
// answer matches the one the README shows (times aside, base64 elided with "..." matched
// by its ends), and checks each: the chart over HTTP and over MCP, and files in the
// python environment.
func testREADMEExamples(t *testing.T, svc *service) {
	examples := readmeExamples(t)
	seen := map[string]bool{}
	for i, ex := range examples {
		t.Run(fmt.Sprintf("example %d", i+1), func(t *testing.T) {
			args, path, body := readmeRequest(t, ex, svc.URL)
			waitWarm(t, svc)
			r := runCurl(t, args...)
			var got any
			r.decode(t, &got)
			if r.Status != http.StatusOK {
				t.Fatalf("%.120s: status %d: %.300s", ex.line, r.Status, r.Body)
			}
			var diffs []string
			matchJSON("", "", ex.answer, got, &diffs)
			for _, d := range diffs {
				t.Errorf("README's answer to %.80s...: %s", ex.line, d)
			}
			kind := checkREADMEAnswer(t, path, body, r)
			seen[kind] = true
		})
	}
	for _, kind := range []string{"http chart", "http python files", "mcp chart"} {
		if !seen[kind] {
			t.Errorf("README's %q section has no %s example (it has %d)", readmeSection, kind, len(examples))
		}
	}
}

// readmeRequest is the example's curl arguments aimed at base, the path it calls and
// its request body decoded.
func readmeRequest(t testing.TB, ex readmeExample, base string) (args []string, path string, body map[string]any) {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	for i, a := range ex.args {
		if rest, ok := strings.CutPrefix(a, readmeHost); ok {
			ex.args[i], path = host+rest, rest
		}
		if a == "-d" && i+1 < len(ex.args) {
			if err := json.Unmarshal([]byte(ex.args[i+1]), &body); err != nil {
				t.Fatalf("README: the body of %.120q is not JSON: %v", ex.line, err)
			}
		}
	}
	if path == "" || body == nil {
		t.Fatalf("README: %.120q calls no %s URL with a -d body", ex.line, readmeHost)
	}
	return ex.args, path, body
}

// checkREADMEAnswer checks an example's answer by what it asked, and names its kind.
func checkREADMEAnswer(t *testing.T, path string, body map[string]any, r curlResult) string {
	t.Helper()
	switch {
	case path == "/mcp":
		params, _ := body["params"].(map[string]any)
		if body["method"] != "tools/call" || params["name"] != "run_python" || !jsonEqual(params["arguments"], chartArguments(t)) {
			t.Errorf("the MCP example is not tools/call of run_python with the chart example's arguments: %v", body)
		}
		var rpc struct {
			Result mcpResult `json:"result"`
		}
		r.decode(t, &rpc)
		checkChartMCP(t, rpc.Result)
		return "mcp chart"
	case path == "/v1/code" && body["environment"] == "data":
		if !jsonEqual(body, chartArguments(t)) {
			t.Errorf("the README's chart request is not testdata/chart.py with testdata/sales.csv: %v", body)
		}
		var a dataAnswer
		r.decode(t, &a)
		checkChartAnswer(t, a)
		return "http chart"
	case path == "/v1/code":
		var a dataAnswer
		r.decode(t, &a)
		checkTodoAnswer(t, body, a)
		return "http python files"
	}
	t.Errorf("an example calls %s", path)
	return path
}

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
		t.Errorf("the README's python files request is not testdata/todo.py with testdata/todo.txt: %v", body)
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

// matchJSON appends to diffs where got differs from want, the README's answer: the same
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
				*diffs = append(*diffs, fmt.Sprintf("%s.%s is not in the README", path, k))
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
			*diffs = append(*diffs, fmt.Sprintf("%s: %.100s, the README says %.100s", path, asJSON(got), asJSON(want)))
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
