package httpapi

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
	"sandboxd/httpapi/mcptools"
)

// The MCP tools' descriptions: what a model reads to pick a tool and call
// it, built from the API's schemas (schema.go, sessions_doc.go) as the
// OpenAPI document is, and quoted by the tools' discovery extensions
// (discovery.go). The tools themselves are package mcptools's.

// languageFacts is what a tool and a schema say of one language.
type languageFacts struct {
	// Title is the language as a person writes it.
	Title string
	// Program says what code holds and how it runs, for code's schema.
	Program string
	// Sandbox says what runs the program, for the tool's description.
	Sandbox string
	// Example is a call's code and stdin, and Stdout what it prints.
	Example, Stdin, Stdout string
}

// languages holds each language's facts, by canonical name.
var languages = map[string]languageFacts{
	sandboxd.LanguagePython: {Title: "Python",
		Program: "The Python 3.11 program (standard library only), as `python3 main.py` would run it.",
		Sandbox: "a short Python 3.11 program",
		Example: "import sys\nprint(sys.stdin.read().upper())", Stdin: "hello", Stdout: "HELLO\n"},
	sandboxd.LanguageJavaScript: {Title: "JavaScript",
		Program: "The JavaScript program, run by Node.js 24 as `node main.js` would run it (built-in modules, no npm " +
			"packages); require, import and top-level await work.",
		Sandbox: "a short JavaScript program on Node.js 24 (built-in modules such as fs and crypto; no npm packages)",
		Example: "const s = require('fs').readFileSync(0, 'utf8');\nconsole.log(s.toUpperCase());", Stdin: "hello",
		Stdout: "HELLO\n"},
	sandboxd.LanguageTypeScript: {Title: "TypeScript",
		Program: "The TypeScript program: its types are stripped (not checked) and it runs on Node.js 24 as JavaScript; " +
			"a syntax error is the program's own error, in stderr.",
		Sandbox: "a short TypeScript program, transpiled (not type-checked) and run on Node.js 24 (built-in modules, " +
			"no npm packages)",
		Example: "const s: string = require('fs').readFileSync(0, 'utf8');\nconsole.log(s.toUpperCase());",
		Stdin:   "hello", Stdout: "HELLO\n"},
	sandboxd.LanguageBash: {Title: "Bash",
		Program: "The Bash script, as `bash main.sh` would run it, with coreutils, sed, grep, awk and find.",
		Sandbox: "a short Bash script (coreutils, sed, grep, awk, find)",
		Example: "tr a-z A-Z", Stdin: "hello", Stdout: "HELLO\n"},
}

// toolLanguages are the languages that get a tool: those some enabled
// environment runs.
func (s *Server) toolLanguages() []string { return s.catalog().Languages() }

// runToolNames are the names of the run tools this service lists.
func (s *Server) runToolNames() []string {
	var names []string
	for _, lang := range s.toolLanguages() {
		names = append(names, mcptools.RunToolName(lang))
	}
	return names
}

// runTool describes lang's tool: its schemas and annotations.
func (s *Server) runTool(lang string) *mcp.Tool {
	no := false
	title := "Run " + languages[lang].Title
	return &mcp.Tool{
		Name:  mcptools.RunToolName(lang),
		Title: title,
		Description: "Run " + languages[lang].Sandbox + " in a fresh, isolated sandbox without network, and get its " +
			"stdout, stderr, exit code, CPU time and peak memory. Each call is a new sandbox: nothing persists " +
			"between calls. Environments: " + strings.Join(s.catalog().EnvironmentsOf(lang), ", ") + " (see the " +
			"environment field). Files sent in files are in the working directory; the files the program writes there " +
			"come back in files, and each image among them also as an image." + s.runSessionsHint(lang),
		InputSchema:  s.toolInputSchema(lang),
		OutputSchema: s.toolOutputSchema(),
		Annotations: &mcp.ToolAnnotations{
			Title:           title,
			ReadOnlyHint:    false,
			DestructiveHint: &no,
			IdempotentHint:  false,
			OpenWorldHint:   &no,
		},
	}
}

// sessionIDProp is the schema of a run tool's session_id, for lang.
func sessionIDProp(lang string) map[string]any {
	return typed("string", "The session_id that open_session returned for language "+lang+": the program runs "+
		"in that session, after its earlier calls. Leave environment out with it (a session keeps its own).")
}

// runSessionsHint is the sentence of lang's run tool's description on
// sessions, when they are on.
func (s *Server) runSessionsHint(lang string) string {
	if s.Sessions == nil {
		return ""
	}
	kept := "the variables, imports and /tmp files of its earlier calls remain, and the value of its last " +
		"expression comes back in result."
	if lang == sandboxd.LanguageBash {
		kept = "the variables, functions, working directory and /tmp files of its earlier calls remain."
	}
	return " To keep state, call open_session with language " + lang + " first and pass its session_id: the " +
		"program then runs in that session, where " + kept
}

// openSessionTool describes open_session.
func (s *Server) openSessionTool() *mcp.Tool {
	no := false
	return &mcp.Tool{
		Name:  mcptools.OpenToolName,
		Title: "Open a session",
		Description: fmt.Sprintf("Open a session: one live interpreter of language (%s; python when absent) in its "+
			"own sandbox without network, which keeps its state and /tmp between calls. Pass the session_id it "+
			"returns to the run tool of that language (%s) for each step, and call close_session when done; it ends "+
			"by itself %s after its last call, and %s after it opened at the latest. Environments: %s.",
			strings.Join(s.toolLanguages(), ", "), strings.Join(s.runToolNames(), ", "), s.SessionSettings.IdleTimeout,
			s.SessionSettings.MaxLifetime, strings.Join(s.environmentNames(), ", ")),
		InputSchema:  s.sessionOpenSchema(),
		OutputSchema: map[string]any{"type": "object", "anyOf": []any{s.sessionSchema(), paymentRequiredSchema()}},
		Annotations:  &mcp.ToolAnnotations{Title: "Open a session", DestructiveHint: &no, OpenWorldHint: &no},
	}
}

// closeSessionTool describes close_session.
func (s *Server) closeSessionTool() *mcp.Tool {
	yes, no := true, false
	return &mcp.Tool{
		Name:  mcptools.CloseToolName,
		Title: "Close a session",
		Description: "End a session that open_session opened: its sandbox is removed and its state is lost; " +
			"the id then answers as ended. Free.",
		InputSchema: object("The session to end.", map[string]any{
			"session_id": typed("string", "The session_id that open_session returned."),
		}, "session_id"),
		OutputSchema: object("The session ended.", map[string]any{
			"session_id": typed("string", "The session's id."),
			"closed":     typed("boolean", "Always true: the session and its sandbox are gone."),
		}, "session_id", "closed"),
		Annotations: &mcp.ToolAnnotations{Title: "Close a session", DestructiveHint: &yes,
			IdempotentHint: true, OpenWorldHint: &no},
	}
}
