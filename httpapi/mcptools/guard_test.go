package mcptools

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
)

// statuses is the fake mapping of errorsService: the few codes the tests
// use, as httpapi's mapping gives them.
var statuses = map[sandboxd.Code]int{sandboxd.CodeNotFound: http.StatusNotFound, sandboxd.CodeBusy: http.StatusTooManyRequests,
	sandboxd.CodePayment: http.StatusPaymentRequired}

// errorsService maps errors as statuses says and quotes terms for payment
// errors; its other methods are not called by the tests that use it.
type errorsService struct{ Service }

// Refusal is statuses' status and the retry rounded up to seconds.
func (errorsService) Refusal(err error) (int, int) {
	retry := 0
	var e *sandboxd.Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		retry = int((e.RetryAfter + time.Second - 1) / time.Second)
	}
	return statuses[sandboxd.ErrorCode(err)], retry
}

// Terms are x402 terms naming the tool, for a payment error only.
func (errorsService) Terms(tool string, err error) map[string]any {
	if sandboxd.ErrorCode(err) != sandboxd.CodePayment {
		return nil
	}
	return map[string]any{"x402Version": 2, "tool": tool}
}

// Report returns nil: no settlement is reported.
func (errorsService) Report(*sandboxd.Settlement) map[string]any { return nil }

// TestLiftArguments: a run tool call's arguments are lifted out and
// replaced by {}; another message is left whole; what is left over
// EnvelopeBytes is refused as too large.
func TestLiftArguments(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(1)"}}}`
	envelope, args, err := liftArguments([]byte(call))
	if err != nil || string(args) != `{"code":"print(1)"}` || !strings.Contains(string(envelope), `"arguments":{}`) {
		t.Errorf("run_python: %s %s %v", envelope, args, err)
	}
	other := strings.Replace(call, "run_python", "close_session", 1)
	if envelope, args, err := liftArguments([]byte(other)); err != nil || args != nil || string(envelope) != other {
		t.Errorf("close_session: %s %s %v", envelope, args, err)
	}
	long := `{"jsonrpc":"2.0","id":"` + strings.Repeat("i", EnvelopeBytes) + `","method":"ping"}`
	if _, _, err := liftArguments([]byte(long)); sandboxd.ErrorCode(err) != sandboxd.CodeTooLarge {
		t.Errorf("long id: %v", err)
	}
}

// TestToolErrors: a payment error is its terms, as structuredContent and
// as the text; a busy one says when to retry; a session's refusal names
// its HTTP status and the tool that opens sessions.
func TestToolErrors(t *testing.T) {
	s := &server{svc: errorsService{}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	res := s.toolError("run_python", sandboxd.Errorf(sandboxd.CodePayment, "test", "pay"))
	text, _ := json.Marshal(res.StructuredContent)
	if !res.IsError || res.Content[0].(*mcp.TextContent).Text != string(text) || !strings.Contains(string(text), `"tool":"run_python"`) {
		t.Errorf("payment: %+v", res)
	}
	busy := &sandboxd.Error{Code: sandboxd.CodeBusy, Message: "busy", RetryAfter: 1500 * time.Millisecond}
	if got := s.toolError("run_python", busy).Content[0].(*mcp.TextContent).Text; got != "busy; retry the call in 2 s" {
		t.Errorf("busy: %q", got)
	}
	gone := sandboxd.Errorf(sandboxd.CodeNotFound, "test", "the session ended; open a new one with POST /v1/sessions")
	if got := s.toolError("run_python", gone).Content[0].(*mcp.TextContent).Text; got !=
		"404 Not Found: the session ended; open a new one with open_session (POST /v1/sessions over HTTP)" {
		t.Errorf("not found: %q", got)
	}
}
