package interop

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// docsHost is the address the documentation's examples call (`make run` serves there).
const docsHost = "localhost:8080"

// docsPrompt starts a checked example: a curl command of the documentation whose answer,
// shown under it, must be what the real service answers. A command shown without it is
// not run, and must then show no answer.
const docsPrompt = "$ curl "

// docExample is one "$ curl ..." command of a documentation page and the answer shown
// under it.
type docExample struct {
	page   string   // the page's path in the repository
	line   int      // the command's first line, 1-based
	args   []string // curl's arguments, split as a shell splits them
	answer any      // the answer shown, decoded
}

// String names the example for messages.
func (ex docExample) String() string {
	return fmt.Sprintf("%s:%d", ex.page, ex.line)
}

// repoRoot is the repository's top directory.
func repoRoot() string {
	return filepath.Join(interopDir, "..", "..")
}

// docPages are the pages whose examples are checked: the README and every page of docs/.
func docPages(t testing.TB) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot(), "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages in docs/ (%v)", err)
	}
	out := []string{"README.md"}
	for _, p := range pages {
		out = append(out, filepath.Join("docs", filepath.Base(p)))
	}
	return out
}

// docExamples reads the checked examples of page: each "$ curl" command, continued on
// the next lines while a single quote is open or a line ends in " \", and the JSON answer
// under it (the lines up to a blank line, the next "$ " or the fence).
func docExamples(t testing.TB, page string) []docExample {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(), page))
	if err != nil {
		t.Fatal(err)
	}
	return parseDocExamples(t, page, string(raw))
}

// parseDocExamples is docExamples of a page's text.
func parseDocExamples(t testing.TB, page, text string) []docExample {
	t.Helper()
	lines := strings.Split(text, "\n")
	var out []docExample
	for i := 0; i < len(lines); i++ {
		cmd, ok := strings.CutPrefix(lines[i], docsPrompt)
		if !ok {
			continue
		}
		ex := docExample{page: page, line: i + 1}
		for i+1 < len(lines) && continues(cmd) {
			i++
			if strings.Count(cmd, "'")%2 == 1 {
				cmd += "\n" + lines[i]
			} else {
				cmd = strings.TrimSuffix(cmd, `\`) + " " + strings.TrimSpace(lines[i])
			}
		}
		var answer []string
		for i+1 < len(lines) && lines[i+1] != "" && !strings.HasPrefix(lines[i+1], "$ ") &&
			!strings.HasPrefix(lines[i+1], "```") {
			i++
			answer = append(answer, lines[i])
		}
		ex.args = shellWords(t, cmd)
		if len(answer) == 0 {
			t.Fatalf("%s: a checked example shows no answer (write it without %q, or show its answer)", ex, "$ ")
		}
		if err := json.Unmarshal([]byte(strings.Join(answer, "\n")), &ex.answer); err != nil {
			t.Fatalf("%s: the answer is not JSON: %v", ex, err)
		}
		out = append(out, ex)
	}
	return out
}

// continues says whether a command goes on to the next line: a single quote is open, or
// the line ends in a backslash outside quotes.
func continues(cmd string) bool {
	return strings.Count(cmd, "'")%2 == 1 || strings.HasSuffix(cmd, ` \`)
}

// shellWords splits a command line as sh does, for the documentation's simple lines:
// words between spaces, single quotes taken literally; anything else a shell would
// interpret fails the test (the commands must run as written).
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
		case strings.ContainsRune("\"\\$`|&;<>(){}*?#~\n", r):
			t.Fatalf("docs: %q in %.120q outside single quotes", r, line)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("docs: an unclosed quote in %.120q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// docRequest is the example's curl arguments aimed at base (a body "@file" named from the
// repository's top, where `make run` is started), the path it calls and its body decoded
// (nil without one).
func docRequest(t testing.TB, ex docExample, base string) (args []string, path string, body map[string]any) {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	args = slices.Clone(ex.args)
	for i, a := range args {
		if rest, ok := strings.CutPrefix(a, docsHost); ok {
			args[i], path = host+rest, rest
		}
		if (a == "-d" || a == "--data-binary") && i+1 < len(args) {
			raw := []byte(args[i+1])
			if file, ok := strings.CutPrefix(args[i+1], "@"); ok {
				args[i+1] = "@" + filepath.Join(repoRoot(), file)
				var err error
				if raw, err = os.ReadFile(filepath.Join(repoRoot(), file)); err != nil {
					t.Fatalf("%s: %v", ex, err)
				}
			}
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatalf("%s: the body is not a JSON object: %v", ex, err)
			}
		}
	}
	if path == "" {
		t.Fatalf("%s: the command calls no %s URL", ex, docsHost)
	}
	return args, path, body
}

// TestDocsExamples runs every checked example of the README and of each page of docs/
// against a real service in free mode with both environments, as written but for the
// address, each once the warm pools are full; the answer must match the one shown (times
// aside, base64 elided with "..." matched by its ends). The examples of the data work are
// checked further by what they ran (the chart over HTTP and MCP, files in python).
func TestDocsExamples(t *testing.T) {
	mustInterop(t)
	svc := startService(t, instance("docs"), true)
	for _, page := range docPages(t) {
		t.Run(page, func(t *testing.T) {
			kinds := map[string]bool{}
			examples := docExamples(t, page)
			ids := docSessions{} // a page's session ids, documented -> live (docs_session_test.go)
			for _, ex := range examples {
				t.Run(fmt.Sprint(ex.line), func(t *testing.T) { kinds[runDocExample(t, svc, ex, ids)] = true })
			}
			if page == "README.md" && (len(examples) < 7 || len(ids) != 1) {
				t.Errorf("README.md has %d checked examples opening %d sessions, want its three calls, then a session "+
					"opened and three calls in it", len(examples), len(ids))
			}
			if page == filepath.Join("docs", "sessions.md") && (len(examples) != 8 || len(ids) != 2) {
				t.Errorf("%s has %d checked examples opening %d sessions, want a python session (open, three calls "+
					"that build on each other, its state), then a data one (open, a load, a chart)", page, len(examples), len(ids))
			}
			if page == filepath.Join("docs", "data.md") {
				for _, kind := range []string{"http chart", "http python files", "mcp chart"} {
					if !kinds[kind] {
						t.Errorf("%s has no %s example", page, kind)
					}
				}
			}
		})
	}
}

// runDocExample runs one example against svc, matches its answer and names its kind.
func runDocExample(t *testing.T, svc *service, ex docExample, ids docSessions) string {
	ids.before(&ex)
	args, path, body := docRequest(t, ex, svc.URL)
	waitWarm(t, svc)
	r := runCurl(t, args...)
	var got any
	r.decode(t, &got)
	ids.after(&ex, got)
	var diffs []string
	matchJSON("", "", ex.answer, got, &diffs)
	for _, d := range diffs {
		t.Errorf("%s: the answer shown differs: %s", ex, d)
	}
	return checkKnownAnswer(t, path, body, r)
}

// checkKnownAnswer checks the answer of a data-work example by what it asked, and names
// its kind; any other example is named "" and checked by its answer alone.
func checkKnownAnswer(t *testing.T, path string, body map[string]any, r curlResult) string {
	t.Helper()
	if r.Status != http.StatusOK || body == nil {
		return ""
	}
	switch {
	case path == "/mcp":
		params, _ := body["params"].(map[string]any)
		if body["method"] != "tools/call" || params["name"] != "run_python" ||
			!jsonEqual(params["arguments"], chartArguments(t)) {
			t.Errorf("the MCP example is not tools/call of run_python with the chart example's arguments: %v", body)
		}
		var rpc struct {
			Result mcpResult `json:"result"`
		}
		r.decode(t, &rpc)
		checkChartMCP(t, rpc.Result)
		return "mcp chart"
	case path == "/v1/code" && body["environment"] == "data" && body["files"] != nil:
		if !jsonEqual(body, chartArguments(t)) {
			t.Errorf("the chart request is not testdata/chart.py with testdata/sales.csv: %v", body)
		}
		var a dataAnswer
		r.decode(t, &a)
		checkChartAnswer(t, a)
		return "http chart"
	case path == "/v1/code" && body["files"] != nil:
		var a dataAnswer
		r.decode(t, &a)
		checkTodoAnswer(t, body, a)
		return "http python files"
	}
	return ""
}
