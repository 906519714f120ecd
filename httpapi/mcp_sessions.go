package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
)

// Sessions over MCP: the tools open_session and close_session, and
// run_python with a session_id. They take the HTTP routes' flows
// (openSession, callSession: the one payment order of each), paid over
// x402's MCP transport as run_python is; their structured results are the
// HTTP answers.

// The session tools' names, and the resource a payment to open a session
// pays for (a call in a session pays for run_python's).
const (
	openToolName        = "open_session"
	closeToolName       = "close_session"
	openToolResourceURL = "mcp://tool/" + openToolName
)

// sessionToolInput is the arguments of run_python when sessions are on.
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

// sessionIDProp is the schema of run_python's session_id.
func sessionIDProp() map[string]any {
	return typed("string", "The session_id that open_session returned: the program runs in that session, "+
		"after its earlier calls. Leave environment out with it (a session keeps its own).")
}

// runPythonSessionsHint is the sentence of run_python's description on
// sessions, when they are on.
func (s *Server) runPythonSessionsHint() string {
	if s.Sessions == nil {
		return ""
	}
	return " To keep state, call open_session first and pass its session_id: the program then runs in that " +
		"session, where the variables, imports and /tmp files of its earlier calls remain, and the value of its " +
		"last expression comes back in result."
}

// openSessionTool describes open_session.
func (s *Server) openSessionTool() *mcp.Tool {
	no := false
	return &mcp.Tool{
		Name:  openToolName,
		Title: "Open a Python session",
		Description: fmt.Sprintf("Open a session: one Python interpreter in its own sandbox without network, which keeps "+
			"its globals, imports and /tmp between calls. Pass the session_id it returns to run_python for each step, "+
			"and call close_session when done; it ends by itself %s after its last call, and %s after it opened at the "+
			"latest. Environments: %s.", s.SessionSettings.IdleTimeout, s.SessionSettings.MaxLifetime,
			strings.Join(s.environmentNames(), ", ")),
		InputSchema:  s.sessionOpenSchema(),
		OutputSchema: map[string]any{"type": "object", "anyOf": []any{s.sessionSchema(), paymentRequiredSchema()}},
		Annotations:  &mcp.ToolAnnotations{Title: "Open a Python session", DestructiveHint: &no, OpenWorldHint: &no},
	}
}

// closeSessionTool describes close_session.
func (s *Server) closeSessionTool() *mcp.Tool {
	yes, no := true, false
	return &mcp.Tool{
		Name:  closeToolName,
		Title: "Close a Python session",
		Description: "End a session that open_session opened: its sandbox is removed and its state is lost; " +
			"the id then answers as ended. Free.",
		InputSchema: object("The session to end.", map[string]any{
			"session_id": typed("string", "The session_id that open_session returned."),
		}, "session_id"),
		OutputSchema: object("The session ended.", map[string]any{
			"session_id": typed("string", "The session's id."),
			"closed":     typed("boolean", "Always true: the session and its sandbox are gone."),
		}, "session_id", "closed"),
		Annotations: &mcp.ToolAnnotations{Title: "Close a Python session", DestructiveHint: &yes,
			IdempotentHint: true, OpenWorldHint: &no},
	}
}

// openToolExtensions are the extensions declared for open_session.
func (s *Server) openToolExtensions() map[string]any {
	example := map[string]any{"session_id": "ses_" + "8f0c1d2e3a4b5c6d7e8f901a2b3c4d5e", "environment": "python",
		"created_at": "2026-12-01T12:00:00Z", "expires_at": "2026-12-01T12:05:00Z", "idle_timeout_s": 300, "max_lifetime_s": 1800}
	return s.withPaymentID(map[string]any{bazaarKey: toolBazaar(s.openSessionTool(), map[string]any{"environment": "python"},
		example, s.sessionSchema())})
}

// declaredExtensions are the extensions declared for a paid tool's terms.
func (s *Server) declaredExtensions(tool string) map[string]any {
	switch tool {
	case toolName:
		return s.toolExtensions()
	case openToolName:
		return s.openToolExtensions()
	}
	return nil
}

// callOpenSession opens a session through the HTTP route's paid flow
// (openSession), paid at the open price for openToolResourceURL.
func (s *Server) callOpenSession(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	env, err := s.openArgs(req.Params.Arguments)
	releaseBody(ctx)
	if err != nil {
		return s.toolError(openToolName, err), nil
	}
	pay, err := toolPayment(req, openToolResourceURL, s.openToolExtensions())
	if err != nil {
		return s.toolError(openToolName, err), nil
	}
	pay.Environment = env
	out, err := s.openSession(ctx, env, pay)
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
	return &mcp.TextContent{Text: fmt.Sprintf("session %s is open in %s until %s (each call moves it to %d s after "+
		"the call); pass its session_id to run_python, and end it with close_session", open.SessionID, open.Environment,
		open.ExpiresAt, open.IdleTimeoutS)}
}

// pendingOpenText is the text content that names a session kept while its
// opening's settlement is pending.
func pendingOpenText(id string) mcp.Content {
	return &mcp.TextContent{Text: "the session was opened and is kept while its settlement is pending: session_id " + id}
}

// openArgs decodes open_session's arguments (none, or an environment), as
// strictly as the body of POST /v1/sessions.
func (s *Server) openArgs(args json.RawMessage) (string, error) {
	if err := argsWithin(args, min(int64(openBodyLimit), s.MaxBodyBytes)); err != nil {
		return "", err
	}
	var in openRequest
	if trimmed := bytes.TrimSpace(args); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if err := decodeObject(trimmed, s.requestLimits(openShape), &in); err != nil {
			return "", err
		}
	}
	return s.environment(in.Environment)
}

// callCloseSession ends a session, as DELETE /v1/sessions/{id} does: free,
// the id being the capability.
func (s *Server) callCloseSession(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in closeToolInput
	err := argsWithin(req.Params.Arguments, openBodyLimit)
	if err == nil {
		err = decodeObject(req.Params.Arguments, s.requestLimits(closeShape), &in)
	}
	releaseBody(ctx)
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

// callInSession runs run_python's program in session id through the HTTP
// route's paid flow (callSession): the session is looked up before any
// payment (an unknown, ended or expired one is refused for nothing, unless
// the call is the retry of one already answered: endedCallResult), the
// program runs in the session's environment, and the call is paid at its
// price, by the wallet that opened the session only.
func (s *Server) callInSession(ctx context.Context, req *mcp.CallToolRequest, id string, args codeRequest) (*mcp.CallToolResult, error) {
	info, err := s.Sessions.Get(ctx, id)
	if err != nil {
		return s.endedCallResult(ctx, req, id, args, err)
	}
	if args.Environment != nil {
		return s.toolError(toolName, sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.validate",
			`field "environment" is not accepted with "session_id": the session keeps the environment it was opened in (%s); leave it out`,
			info.Environment)), nil
	}
	args.Environment = &info.Environment
	job, pay, err := s.runPythonJob(req, args)
	if err != nil {
		return s.toolError(toolName, err), nil
	}
	out, err := s.callSession(ctx, id, job, pay)
	if rep := replayOf(err); rep != nil {
		return s.replayResult(ctx, toolName, rep)
	}
	if err != nil {
		return s.toolFailure(ctx, toolName, err)
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

// newSessionResponse is the answer of an opened session.
func newSessionResponse(i sandboxd.SessionInfo) SessionResponse {
	return SessionResponse{SessionID: i.ID, Environment: i.Environment, CreatedAt: stamp(i.Created), ExpiresAt: stamp(i.Expires),
		IdleTimeoutS: int64(i.IdleTimeout / time.Second), MaxLifetimeS: int64(i.MaxLifetime / time.Second)}
}
