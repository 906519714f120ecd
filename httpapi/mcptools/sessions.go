package mcptools

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd/httpapi/wire"
)

// Sessions over MCP: the tools open_session and close_session, and the
// run tool of the session's language (run_python, …) with a session_id.
// They take the HTTP routes' flows (Service.Open, Service.Run: the one
// payment order of each), paid over x402's MCP transport as a run is;
// their structured results are the HTTP answers.

// closeResult is the structured result of close_session (over
// HTTP, DELETE answers 204 with no body).
type closeResult struct {
	SessionID string `json:"session_id"`
	Closed    bool   `json:"closed"`
}

// callOpenSession opens a session through the HTTP route's paid flow
// (Service.Open), paid at the open price for OpenToolResourceURL.
func (s *server) callOpenSession(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	d, err := s.svc.Open(ctx, req.Params.Arguments, toolPayment(req, OpenToolResourceURL))
	if d.Replay != nil {
		return s.replayResult(ctx, OpenToolName, d, err)
	}
	if err != nil && d.Open != nil {
		// Pending: the session is kept, and its id is the payer's.
		result := s.toolError(OpenToolName, err)
		result.Content = append(result.Content, pendingOpenText(d.Open.SessionID))
		return result, nil
	}
	if err != nil {
		return s.toolFailure(ctx, OpenToolName, err)
	}
	return s.delivered(d), nil
}

// openText is the text content of an opened session.
func openText(open wire.SessionResponse) mcp.Content {
	return &mcp.TextContent{Text: fmt.Sprintf("session %s runs %s in %s until %s (each call moves it to %d s after "+
		"the call); pass its session_id to %s, and end it with close_session", open.SessionID, open.Language,
		open.Environment, open.ExpiresAt, open.IdleTimeoutS, RunToolName(open.Language))}
}

// pendingOpenText is the text content that names a session kept while its
// opening's settlement is pending.
func pendingOpenText(id string) mcp.Content {
	return &mcp.TextContent{Text: "the session was opened and is kept while its settlement is pending: session_id " + id}
}

// callCloseSession ends a session, as DELETE /v1/sessions/{id} does: free,
// the id being the capability.
func (s *server) callCloseSession(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, err := s.svc.Close(ctx, req.Params.Arguments)
	if err != nil {
		return s.toolFailure(ctx, CloseToolName, err)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: "the session is closed; its sandbox is removed"}},
		StructuredContent: closeResult{SessionID: id, Closed: true},
	}, nil
}

// sessionSummary is the text content of a delivered call in a session: the
// run's summary, then its result and the session's state.
func sessionSummary(a wire.SessionCodeResponse) string {
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
