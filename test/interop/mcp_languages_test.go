package interop

import (
	"testing"
)

// mcpLanguagePrograms are, per run tool of the node environment, a program that writes
// its stdin upper-cased, then 42: mcp.mjs's Python program in that language.
var mcpLanguagePrograms = []struct{ tool, lang, code string }{
	{"run_javascript", "javascript",
		`process.stdout.write(require("node:fs").readFileSync(0, "utf8").toUpperCase()); console.log(6 * 7)`},
	{"run_typescript", "typescript",
		"import { readFileSync } from \"node:fs\";\nconst s: string = readFileSync(0, \"utf8\");\n" +
			"process.stdout.write(s.toUpperCase()); console.log(6 * 7)"},
	{"run_bash", "bash", "tr a-z A-Z; echo $((6 * 7))"},
}

// TestMCPLanguages: the official MCP client, against the real binary in free mode with
// its default environments, lists a run tool per language, each described as its
// language (checkTools), calls run_javascript, run_typescript and run_bash with stdin
// and gets each run in node as its language; and open_session with language
// javascript, then run_javascript with its session_id, keeps a top-level let and a
// function from one call to the next.
func TestMCPLanguages(t *testing.T) {
	mustInterop(t)
	svc := startService(t, instance("mcp-languages"), true)
	for _, p := range mcpLanguagePrograms {
		t.Run(p.tool, func(t *testing.T) {
			args := writeArguments(t, map[string]any{"code": p.code, "stdin": "hi\n"})
			out := runMCP(t, "call", svc.URL+"/mcp", "--tool", p.tool, "--arguments", args)
			checkTools(t, out.Tools)
			checkRun(t, out.Result)
			if sc := out.Result.StructuredContent; sc["lang"] != p.lang || sc["environment"] != "node" {
				t.Errorf("%s ran as %v in %v, want %s in node", p.tool, sc["lang"], sc["environment"], p.lang)
			}
		})
	}
	t.Run("javascript session", func(t *testing.T) { checkJavaScriptSession(t, svc) })
}

// checkJavaScriptSession runs mcp.mjs's session scenario with run_javascript in a
// session opened with language javascript, and checks each call's result.
func checkJavaScriptSession(t *testing.T, svc *service) {
	steps := []map[string]any{
		{"code": "let x = 41\nfunction twice(n) { return 2 * n }"},
		{"code": "x += 1\nconsole.log(twice(x))\n'x is ' + x"},
	}
	plan := writeArguments(t, map[string]any{"tool": "run_javascript", "open": map[string]any{"language": "javascript"},
		"steps": steps})
	var out mcpSessionOutcome
	runNode(t, mcpTimeout, &out, "mcp.mjs", "session", "--url", svc.URL+"/mcp", "--arguments", plan)
	if out.Error != "" {
		t.Fatalf("mcp.mjs session: %s", out.Error)
	}
	open := out.Open.Result
	id, _ := open.StructuredContent["session_id"].(string)
	if open.IsError || id == "" || open.StructuredContent["language"] != "javascript" ||
		open.StructuredContent["environment"] != "node" {
		t.Fatalf("open_session: thrown %q, isError %v, %v", open.Thrown, open.IsError, open.StructuredContent)
	}
	want := []struct {
		stdout string
		result any
	}{{"", nil}, {"84\n", "'x is 42'"}}
	if len(out.Steps) != len(want) {
		t.Fatalf("%d calls ran, want %d", len(out.Steps), len(want))
	}
	for i, w := range want {
		r := out.Steps[i].Result
		sc := r.StructuredContent
		session, _ := sc["session"].(map[string]any)
		if r.Thrown != "" || r.IsError || sc["status"] != "ok" || sc["lang"] != "javascript" || sc["stdout"] != w.stdout ||
			sc["result"] != w.result || session["session_id"] != id {
			t.Errorf("call %d: thrown %q, isError %v, %v; want stdout %q and result %v", i+1, r.Thrown, r.IsError,
				sc, w.stdout, w.result)
		}
	}
	if c := out.Close; c.IsError || c.StructuredContent["closed"] != true {
		t.Errorf("close_session: thrown %q, isError %v, %v", c.Thrown, c.IsError, c.Content)
	}
}
