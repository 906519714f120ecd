package httpapi

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
)

// One MCP tool runs each language (run_python, run_javascript,
// run_typescript, run_bash), listed for the languages some enabled
// environment runs: a model picks a tool by its name and description, so
// a language is never left to an argument it may forget, and each tool
// carries its language's facts and only the environments that run it
// (docs/design/runtimes.md §8.2).

// runToolPrefix starts the name of every tool that runs a language.
const runToolPrefix = "run_"

// toolName is the name of the tool that runs Python, the one every
// service lists while Python runs.
const toolName = runToolPrefix + sandboxd.LanguagePython

// runToolName is the name of the tool that runs lang.
func runToolName(lang string) string { return runToolPrefix + lang }

// runToolLanguage is the language the tool of that name runs; false for
// any other name (a session tool, or a name no language has).
func runToolLanguage(name string) (string, bool) {
	lang, ok := strings.CutPrefix(name, runToolPrefix)
	if !ok {
		return "", false
	}
	canonical, ok := sandboxd.NormalizeLanguage(lang)
	return lang, ok && canonical == lang
}

// isRunTool reports whether name is the name of a run tool.
func isRunTool(name string) bool {
	_, ok := runToolLanguage(name)
	return ok
}

// runToolNames are the names of the run tools this service lists.
func (s *Server) runToolNames() []string {
	var names []string
	for _, lang := range s.toolLanguages() {
		names = append(names, runToolName(lang))
	}
	return names
}

// toolResource is the resource a payment for lang's tool pays for, as
// x402's MCP transport names a tool.
func toolResource(lang string) string { return "mcp://tool/" + runToolName(lang) }

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

// addRunTools adds one run tool per language to srv.
func (s *Server) addRunTools(srv *mcp.Server) {
	for _, lang := range s.toolLanguages() {
		srv.AddTool(s.runTool(lang), s.callRun(lang))
	}
}

// runTool describes lang's tool: its schemas and annotations.
func (s *Server) runTool(lang string) *mcp.Tool {
	no := false
	title := "Run " + languages[lang].Title
	return &mcp.Tool{
		Name:  runToolName(lang),
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

// callRun is the handler of lang's tool: it runs the program of one
// tools/call through the same paid flow as POST /v1/code (execute); its
// structuredContent is the answer as rendered before the settlement, and a
// retry of a call already answered gets the stored one (replayResult).
// What the caller can act on (bad arguments, busy, payment) is a tool
// error the model can read; only a call whose client went away is a
// protocol error.
func (s *Server) callRun(lang string) mcp.ToolHandler {
	tool := runToolName(lang)
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, sessionID, err := s.decodeToolArgs(toolArgs(ctx, req.Params.Arguments))
		if err != nil {
			return s.toolError(tool, err), nil
		}
		args.Language = &lang
		if sessionID != nil {
			return s.callInSession(ctx, req, lang, *sessionID, args)
		}
		job, err := s.newJob(args)
		if err != nil {
			return s.toolError(tool, err), nil
		}
		pay, err := s.runPayment(req, lang, job)
		if err != nil {
			return s.toolError(tool, err), nil
		}
		phased, _ := s.withPhases(ctx)
		run, err := s.execute(phased, job, pay)
		if rep := replayOf(err); rep != nil {
			return s.replayResult(phased, tool, rep)
		}
		if err != nil {
			return s.toolFailure(ctx, tool, err)
		}
		out := newCodeResponse(job, run.Result)
		return paidResult(&mcp.CallToolResult{
			Content:           append([]mcp.Content{&mcp.TextContent{Text: summary(out)}}, imageBlocks(run.Result.Files)...),
			StructuredContent: json.RawMessage(run.Answer.Body),
		}, run.Settlement), nil
	}
}

// runPayment reads the payment of a call of lang's tool for job, quoted
// at the price of job's environment.
func (s *Server) runPayment(req *mcp.CallToolRequest, lang string, job sandboxd.Job) (sandboxd.PaymentRequest, error) {
	pay, err := toolPayment(req, toolResource(lang), s.toolExtensions(lang))
	pay.Environment = job.Environment
	return pay, err
}
