package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
	"sandboxd/httpapi/ingress"
)

// Sessions over MCP: the tools open_session and close_session, and the
// run tool of the session's language (run_python, …) with a session_id.
// They take the HTTP routes' flows (openSession, callSession: the one
// payment order of each), paid over x402's MCP transport as a run is;
// their structured results are the HTTP answers.

// The session tools' names, and the resource a payment to open a session
// pays for (a call in a session pays for its run tool's).
const (
	openToolName        = "open_session"
	closeToolName       = "close_session"
	openToolResourceURL = "mcp://tool/" + openToolName
)

// sessionToolInput is the arguments of a run tool when sessions are on.
type sessionToolInput struct {
	Code        *string       `json:"code"`
	Stdin       *string       `json:"stdin"`
	Environment *string       `json:"environment"`
	Files       []fileRequest `json:"files"`
	SessionID   *string       `json:"session_id"`
}

// closeToolInput is the arguments of close_session.
type closeToolInput struct {
	SessionID *string `json:"session_id"`
}

// CloseSessionResult is the structured result of close_session (over
// HTTP, DELETE answers 204 with no body).
type CloseSessionResult struct {
	SessionID string `json:"session_id"`
	Closed    bool   `json:"closed"`
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
		Name:  openToolName,
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
		Name:  closeToolName,
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

// openToolExtensions are the extensions declared for open_session.
func (s *Server) openToolExtensions() map[string]any {
	return s.withPaymentID(map[string]any{bazaarKey: toolBazaar(s.openSessionTool(), map[string]any{"language": "python"},
		exampleSession(), s.sessionSchema())})
}

// declaredExtensions are the extensions declared for a paid tool's terms.
func (s *Server) declaredExtensions(tool string) map[string]any {
	if lang, ok := runToolLanguage(tool); ok {
		return s.toolExtensions(lang)
	}
	if tool == openToolName {
		return s.openToolExtensions()
	}
	return nil
}

// callOpenSession opens a session through the HTTP route's paid flow
// (openSession), paid at the open price for openToolResourceURL.
func (s *Server) callOpenSession(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	lang, env, err := s.openArgs(req.Params.Arguments)
	ingress.Release(ctx)
	if err != nil {
		return s.toolError(openToolName, err), nil
	}
	pay, err := toolPayment(req, openToolResourceURL, s.openToolExtensions())
	if err != nil {
		return s.toolError(openToolName, err), nil
	}
	pay.Environment = env
	out, err := s.openSession(ctx, lang, env, pay)
	if rep := replayOf(err); rep != nil {
		return s.replayResult(ctx, openToolName, rep)
	}
	if err != nil && out.Info.ID != "" {
		// Pending: the session is kept, and its id is the payer's.
		result := s.toolError(openToolName, err)
		result.Content = append(result.Content, pendingOpenText(out.Info.ID))
		return result, nil
	}
	if err != nil {
		return s.toolFailure(ctx, openToolName, err)
	}
	return paidResult(&mcp.CallToolResult{Content: []mcp.Content{openText(newSessionResponse(out.Info))},
		StructuredContent: json.RawMessage(out.Answer.Body)}, out.Settlement), nil
}

// openText is the text content of an opened session.
func openText(open SessionResponse) mcp.Content {
	return &mcp.TextContent{Text: fmt.Sprintf("session %s runs %s in %s until %s (each call moves it to %d s after "+
		"the call); pass its session_id to %s, and end it with close_session", open.SessionID, open.Language,
		open.Environment, open.ExpiresAt, open.IdleTimeoutS, runToolName(open.Language))}
}

// pendingOpenText is the text content that names a session kept while its
// opening's settlement is pending.
func pendingOpenText(id string) mcp.Content {
	return &mcp.TextContent{Text: "the session was opened and is kept while its settlement is pending: session_id " + id}
}

// openArgs decodes open_session's arguments (none, or a language and an
// environment), as strictly as the body of POST /v1/sessions, and
// resolves them as it does.
func (s *Server) openArgs(args json.RawMessage) (lang, env string, err error) {
	if err := argsWithin(args, min(int64(openBodyLimit), s.MaxBodyBytes)); err != nil {
		return "", "", err
	}
	var in openRequest
	if trimmed := bytes.TrimSpace(args); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if err := decodeObject(trimmed, s.requestLimits(openShape), &in); err != nil {
			return "", "", err
		}
	}
	return s.resolve(in.Language, in.Environment)
}

// callCloseSession ends a session, as DELETE /v1/sessions/{id} does: free,
// the id being the capability.
func (s *Server) callCloseSession(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in closeToolInput
	err := argsWithin(req.Params.Arguments, openBodyLimit)
	if err == nil {
		err = decodeObject(req.Params.Arguments, s.requestLimits(closeShape), &in)
	}
	ingress.Release(ctx)
	if err == nil && (in.SessionID == nil || *in.SessionID == "") {
		err = sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.validate",
			`field "session_id" is missing or empty; send the session_id that open_session returned`)
	}
	if err == nil {
		err = s.Sessions.Close(ctx, *in.SessionID)
	}
	if err != nil {
		return s.toolFailure(ctx, closeToolName, err)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: "the session is closed; its sandbox is removed"}},
		StructuredContent: CloseSessionResult{SessionID: *in.SessionID, Closed: true},
	}, nil
}

// callInSession runs the program of lang's run tool in session id through
// the HTTP route's paid flow (callSession): the session is looked up before
// any payment (an unknown, ended or expired one is refused for nothing,
// unless the call is the retry of one already answered: endedCallResult),
// a session of another language is refused naming its tool, the program
// runs in the session's environment, and the call is paid at its price, by
// the wallet that opened the session only.
func (s *Server) callInSession(ctx context.Context, req *mcp.CallToolRequest, lang, id string, args codeRequest) (*mcp.CallToolResult, error) {
	tool := runToolName(lang)
	info, err := s.Sessions.Get(ctx, id)
	if err != nil {
		return s.endedCallResult(ctx, req, lang, id, args, err)
	}
	if args.Environment != nil {
		return s.toolError(tool, sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.validate",
			`field "environment" is not accepted with "session_id": the session keeps the environment it was opened in (%s); leave it out`,
			info.Environment)), nil
	}
	if info.Language != lang {
		return s.toolError(tool, sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.validate",
			"session %s… runs %s; call %s with it", shortSessionID(id), info.Language, runToolName(info.Language))), nil
	}
	job, err := s.newSessionJob(info, args)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	pay, err := s.runPayment(req, lang, job)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	out, err := s.callSession(ctx, id, job, pay)
	if rep := replayOf(err); rep != nil {
		return s.replayResult(ctx, tool, rep)
	}
	if err != nil {
		return s.toolFailure(ctx, tool, err)
	}
	answer := newSessionCodeResponse(job, out.Result)
	content := append([]mcp.Content{&mcp.TextContent{Text: sessionSummary(answer)}}, imageBlocks(out.Result.Files)...)
	return paidResult(&mcp.CallToolResult{Content: content, StructuredContent: json.RawMessage(out.Answer.Body)},
		out.Settlement), nil
}

// sessionSummary is the text content of a delivered call in a session: the
// run's summary, then its result and the session's state.
func sessionSummary(a SessionCodeResponse) string {
	var b strings.Builder
	b.WriteString(summary(a.CodeResponse))
	if a.Result != nil {
		fmt.Fprintf(&b, "\nresult: %s", preview(*a.Result))
	}
	if a.SessionEnded {
		fmt.Fprintf(&b, "\nthe session ended (%s): open a new one to go on", a.SessionEndReason)
	} else {
		fmt.Fprintf(&b, "\nsession: %d calls, expires at %s", a.Session.Calls, a.Session.ExpiresAt)
	}
	return b.String()
}

// paidResult is result with the settlement's report in its _meta, when
// something was settled.
func paidResult(result *mcp.CallToolResult, s *sandboxd.Settlement) *mcp.CallToolResult {
	if settled := settlementMeta(s); settled != nil {
		result.Meta = mcp.Meta{metaPaymentResponse: settled}
	}
	return result
}

// toolMessage is the text of a tool error that carries no terms. A
// session's refusals name the HTTP status they are (an agent that knows
// the API reads 403 at once), and point to the MCP tool rather than the
// HTTP route.
func toolMessage(err error) string {
	msg := sandboxd.ErrorMessage(err)
	switch code := sandboxd.ErrorCode(err); code {
	case sandboxd.CodeNotFound, sandboxd.CodeForbidden, sandboxd.CodeConflict:
		status := statusOf(code)
		msg = fmt.Sprintf("%d %s: %s", status, http.StatusText(status),
			strings.ReplaceAll(msg, "POST /v1/sessions", "open_session (POST /v1/sessions over HTTP)"))
	}
	return msg
}
