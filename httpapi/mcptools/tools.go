package mcptools

import (
	"context"
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

// The session tools' names, and the resource a payment to open a session
// pays for (a call in a session pays for its run tool's).
const (
	OpenToolName        = "open_session"
	CloseToolName       = "close_session"
	OpenToolResourceURL = "mcp://tool/" + OpenToolName
)

// RunToolName is the name of the tool that runs lang.
func RunToolName(lang string) string { return runToolPrefix + lang }

// RunToolLanguage is the language the tool of that name runs; false for
// any other name (a session tool, or a name no language has).
func RunToolLanguage(name string) (string, bool) {
	lang, ok := strings.CutPrefix(name, runToolPrefix)
	if !ok {
		return "", false
	}
	canonical, ok := sandboxd.NormalizeLanguage(lang)
	return lang, ok && canonical == lang
}

// isRunTool reports whether name is the name of a run tool.
func isRunTool(name string) bool {
	_, ok := RunToolLanguage(name)
	return ok
}

// ToolResource is the resource a payment for lang's tool pays for, as
// x402's MCP transport names a tool.
func ToolResource(lang string) string { return "mcp://tool/" + RunToolName(lang) }

// callRun is the handler of lang's tool: it runs the program of one
// tools/call through the same paid flow as POST /v1/code, or as a call
// in a session (Service.Run); its structuredContent is the answer as
// rendered before the settlement, and a retry of a call already answered
// gets the stored one (replayResult). What the caller can act on (bad
// arguments, busy, payment) is a tool error the model can read; only a
// call whose client went away is a protocol error.
func (s *server) callRun(lang string) mcp.ToolHandler {
	tool := RunToolName(lang)
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		d, err := s.svc.Run(ctx, lang, toolArgs(ctx, req.Params.Arguments), toolPayment(req, ToolResource(lang)))
		if d.Replay != nil {
			return s.replayResult(ctx, tool, d, err)
		}
		if err != nil {
			return s.toolFailure(ctx, tool, err)
		}
		return s.delivered(d), nil
	}
}

// delivered is the tool result of the delivered answer d: a text summary,
// the image files out as images, the answer as structuredContent and the
// settlement's report, if any, in _meta.
func (s *server) delivered(d Delivery) *mcp.CallToolResult {
	var content []mcp.Content
	switch {
	case d.Run != nil:
		content = append([]mcp.Content{&mcp.TextContent{Text: summary(*d.Run)}}, imageBlocks(d.Files)...)
	case d.Call != nil:
		content = append([]mcp.Content{&mcp.TextContent{Text: sessionSummary(*d.Call)}}, imageBlocks(d.Files)...)
	case d.Open != nil:
		content = []mcp.Content{openText(*d.Open)}
	}
	result := &mcp.CallToolResult{Content: content, StructuredContent: d.Body}
	if settled := s.svc.Report(d.Settlement); settled != nil {
		result.Meta = mcp.Meta{MetaPaymentResponse: settled}
	}
	return result
}
