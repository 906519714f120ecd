package httpapi

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
	"sandboxd/httpapi/mcptools"
)

// callNamed calls the tool name with args and meta.
func callNamed(t *testing.T, cs *mcp.ClientSession, name string, args any, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// mustOpenOverMCP opens a session with open_session and returns its id.
func mustOpenOverMCP(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res := callNamed(t, cs, mcptools.OpenToolName, map[string]any{}, nil)
	if res.IsError {
		t.Fatalf("open_session: %s", text(t, res))
	}
	id, _ := structured(t, res)["session_id"].(string)
	return id
}

// listTools lists the tools by name.
func listTools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tool := range list.Tools {
		tools[tool.Name] = tool
	}
	return tools
}

// TestMCPSessionToolsOnlyWhenOn: with sessions off run_python is listed
// alone, without session_id (an unknown field there); on, open_session and
// close_session join it, run_python takes session_id and answers result
// and session, and each description says how to use sessions.
func TestMCPSessionToolsOnlyWhenOn(t *testing.T) {
	runner := &fakeRunner{}
	off := mustMCP(t, newTestServer(runner, &fakeGate{}))
	tools := listTools(t, off)
	in, _ := json.Marshal(tools[toolName].InputSchema)
	if len(tools) != 1 || strings.Contains(string(in), "session_id") || strings.Contains(tools[toolName].Description, "open_session") {
		t.Fatalf("sessions off: tools %v, run_python's input %s", tools, in)
	}
	res := callTool(t, off, map[string]any{"code": "x", "session_id": "ses_x"}, nil)
	if !res.IsError || !strings.Contains(text(t, res), `unknown field "session_id"`) || runner.ran() != 0 {
		t.Fatalf("session_id with sessions off: %s", text(t, res))
	}

	tools = listTools(t, mustMCP(t, newSessionServer(t, &fakeSessionEngine{}, &fakeGate{}, sessionsConfig())))
	if len(tools) != 3 || tools[mcptools.OpenToolName] == nil || tools[mcptools.CloseToolName] == nil {
		t.Fatalf("sessions on: tools %v", tools)
	}
	in, _ = json.Marshal(tools[toolName].InputSchema)
	out, _ := json.Marshal(tools[toolName].OutputSchema)
	wantIn(t, "run_python's input schema", string(in), `"session_id"`, `"required":["code"]`)
	wantIn(t, "run_python's output schema", string(out), `"result"`, `"session"`, `"session_ended"`, `"session_end_reason"`, `"x402Version"`)
	openOut, _ := json.Marshal(tools[mcptools.OpenToolName].OutputSchema)
	wantIn(t, "open_session's output schema", string(openOut), `"session_id"`, `"expires_at"`, `"x402Version"`)
	wantIn(t, "run_python's description", tools[toolName].Description, "open_session", "session_id", "result")
	wantIn(t, "open_session's description", tools[mcptools.OpenToolName].Description, "run_python", "close_session", "5m0s")
	wantIn(t, "close_session's description", tools[mcptools.CloseToolName].Description, "open_session", "Free")
}

// TestMCPSessionFlow: open_session (the HTTP answer, paid at the open
// price for its own mcp:// resource), two calls with session_id (the
// result and session; paid at the environment's price), close_session,
// then the id refused before any payment is looked at.
func TestMCPSessionFlow(t *testing.T) {
	value := "42"
	engine := &fakeSessionEngine{result: sandboxd.SessionResult{Result: sandboxd.Result{Stdout: "hi\n", Status: sandboxd.StatusOK,
		Files: []sandboxd.File{{Name: "plot.png", Size: 3, MediaType: "image/png", Content: []byte("png")}}}, Value: &value}}
	gate := &fakeGate{}
	cs := mustMCP(t, newSessionServer(t, engine, gate, sessionsConfig()))

	res := callNamed(t, cs, mcptools.OpenToolName, map[string]any{"environment": "python"}, nil)
	open := structured(t, res)
	id, _ := open["session_id"].(string)
	if res.IsError || !regexp.MustCompile(`^ses_[0-9a-f]{32}$`).MatchString(id) || open["environment"] != "python" ||
		open["language"] != "python" || open["idle_timeout_s"] != 300.0 || len(open) != 7 ||
		!strings.Contains(text(t, res), id) || !strings.Contains(text(t, res), "pass its session_id to run_python") {
		t.Fatalf("open_session: %v %s", open, text(t, res))
	}
	if settled, _ := res.Meta[mcptools.MetaPaymentResponse].(map[string]any); settled["transaction"] != "0xsettled" {
		t.Errorf("open_session's _meta %v, want the settlement", res.Meta)
	}
	if req := gate.requests[0]; req.Price != "0.01" || req.ResourceURL != mcptools.OpenToolResourceURL || req.Extensions[bazaarKey] == nil {
		t.Fatalf("the open was checked with %+v", req)
	}

	for calls := 1.0; calls <= 2; calls++ {
		res = callTool(t, cs, map[string]any{"code": "x = 41\nx + 1", "session_id": id}, nil)
		call := structured(t, res)
		session, _ := call["session"].(map[string]any)
		if res.IsError || call["result"] != "42" || call["stdout"] != "hi\n" || session["session_id"] != id || session["calls"] != calls {
			t.Fatalf("call %v: %v", calls, call)
		}
		if len(res.Content) != 2 || !strings.Contains(text(t, res), "result: 42") {
			t.Errorf("call %v: content %+v, want the text with the result, then the image", calls, res.Content)
		}
		if settled, _ := res.Meta[mcptools.MetaPaymentResponse].(map[string]any); settled["transaction"] != "0xsettled" {
			t.Errorf("call %v: _meta %v", calls, res.Meta)
		}
	}
	if req := gate.requests[1]; req.Price != "" || req.Environment != "python" || req.ResourceURL != mcptools.ToolResource(sandboxd.LanguagePython) {
		t.Fatalf("the call was checked with %+v", req)
	}
	if _, _, runs := engine.counts(); runs != 2 || gate.count(&gate.settled) != 3 {
		t.Fatalf("runs %d, settled %d; want 2 runs and 3 settlements", runs, gate.count(&gate.settled))
	}

	res = callNamed(t, cs, mcptools.CloseToolName, map[string]any{"session_id": id}, nil)
	if res.IsError || structured(t, res)["closed"] != true || res.Meta[mcptools.MetaPaymentResponse] != nil {
		t.Fatalf("close_session: %s %v", text(t, res), res.Meta)
	}
	if _, closed, _ := engine.counts(); closed != 1 {
		t.Fatal("the container is not gone after close_session")
	}
	checked := gate.count(&gate.checked)
	res = callTool(t, cs, map[string]any{"code": "x", "session_id": id}, nil)
	if !res.IsError || !strings.HasPrefix(text(t, res), "404 Not Found: ") || !strings.Contains(text(t, res), "open_session") {
		t.Fatalf("a call after the end: %s", text(t, res))
	}
	if res := callNamed(t, cs, mcptools.CloseToolName, map[string]any{"session_id": id}, nil); !res.IsError ||
		!strings.HasPrefix(text(t, res), "404 Not Found: ") {
		t.Fatalf("close_session twice: %s", text(t, res))
	}
	if gate.count(&gate.checked) != checked {
		t.Fatal("a call to an ended session had its payment looked at")
	}
}

// TestMCPSessionCallByAnotherWallet: a call paid by another wallet than
// the opener's is a tool error saying 403, runs nothing, and its payment
// is neither reserved nor settled; the owner's call then runs.
func TestMCPSessionCallByAnotherWallet(t *testing.T) {
	gate := &fakeGate{}
	engine := &fakeSessionEngine{}
	cs := mustMCP(t, newSessionServer(t, engine, gate, sessionsConfig()))
	id := mustOpenOverMCP(t, cs)
	reserved, settled := gate.count(&gate.reserved), gate.count(&gate.settled)
	gate.mu.Lock()
	gate.payer = "0xthief"
	gate.mu.Unlock()
	res := callTool(t, cs, map[string]any{"code": "x", "session_id": id}, nil)
	if !res.IsError || !strings.HasPrefix(text(t, res), "403 Forbidden: ") || res.StructuredContent != nil {
		t.Fatalf("another wallet's call: isError %v, %q", res.IsError, text(t, res))
	}
	if _, _, runs := engine.counts(); runs != 0 || gate.count(&gate.reserved) != reserved || gate.count(&gate.settled) != settled {
		t.Fatalf("runs %d, reserved %d, settled %d: the thief's payment was taken", runs, gate.count(&gate.reserved), gate.count(&gate.settled))
	}
	gate.mu.Lock()
	gate.payer = ""
	gate.mu.Unlock()
	if res := callTool(t, cs, map[string]any{"code": "x", "session_id": id}, nil); res.IsError {
		t.Fatalf("the owner's call: %s", text(t, res))
	}
}

// TestMCPSessionRefusals: what a session tool refuses, before any payment
// is looked at: an environment beside session_id, bad arguments, an
// unknown id, and an open past sessions.max (429, saying when to retry).
func TestMCPSessionRefusals(t *testing.T) {
	gate := &fakeGate{}
	engine := &fakeSessionEngine{}
	cfg := sessionsConfig()
	cfg.Max, cfg.MaxPerPayer = 1, 0
	cs := mustMCP(t, newSessionServer(t, engine, gate, cfg))
	id := mustOpenOverMCP(t, cs)
	checked := gate.count(&gate.checked)
	for _, c := range []struct {
		tool string
		args map[string]any
		says string
	}{
		{toolName, map[string]any{"code": "x", "session_id": id, "environment": "python"}, "the session keeps the environment"},
		{toolName, map[string]any{"code": "", "session_id": id}, `"code"`},
		{toolName, map[string]any{"code": "x", "session_id": "ses_" + strings.Repeat("0", 32)}, "404 Not Found: no such session"},
		{toolName, map[string]any{"code": "x", "session_id": 7}, "must be a string"},
		{mcptools.OpenToolName, map[string]any{"environment": "cobol"}, "not configured"},
		{mcptools.OpenToolName, map[string]any{"environment": "python", "x": 1}, "unknown field"},
		{mcptools.OpenToolName, map[string]any{"environment": strings.Repeat("p", 1010)}, "over the limit"}, // the arguments over the body limit, each string within the scan's
		{mcptools.OpenToolName, map[string]any{}, "retry the call in"},
		{mcptools.CloseToolName, map[string]any{}, `"session_id" is missing`},
		{mcptools.CloseToolName, map[string]any{"session_id": "ses_nope"}, "404 Not Found"},
	} {
		res := callNamed(t, cs, c.tool, c.args, nil)
		if !res.IsError || !strings.Contains(text(t, res), c.says) || res.StructuredContent != nil {
			t.Errorf("%s %.60v: isError %v, %q; want a tool error saying %q", c.tool, c.args, res.IsError, text(t, res), c.says)
		}
	}
	if _, _, runs := engine.counts(); runs != 0 || gate.count(&gate.checked) != checked {
		t.Fatalf("runs %d, payments checked %d; want none after the open", runs, gate.count(&gate.checked)-checked)
	}
}

// TestMCPSessionPayment: unpaid, open_session and a call in a session
// answer the terms as run_python does (structuredContent and its JSON as
// the text), the open's bazaar describing open_session and the call's
// run_python with session_id; the PaymentPayload in _meta reaches the
// gate; a service failure in a call is released, not settled.
func TestMCPSessionPayment(t *testing.T) {
	terms := map[string]any{"x402Version": 2.0, "error": "payment required",
		"accepts": []any{map[string]any{"scheme": "exact", "network": "eip155:84532", "amount": "10000"}}}
	payErr := &sandboxd.Error{Code: sandboxd.CodePayment, Message: "payment required", Payment: termsDetails(terms, nil)}
	engine := &fakeSessionEngine{}
	srv := newSessionServer(t, engine, &fakeGate{checkErr: payErr}, sessionsConfig())
	cs := mustMCP(t, srv)
	res := callNamed(t, cs, mcptools.OpenToolName, map[string]any{}, nil)
	got := structured(t, res)
	info, _ := bazaarOf(t, got)["info"].(map[string]any)
	input, _ := info["input"].(map[string]any)
	if !res.IsError || got["x402Version"] != 2.0 || input["type"] != "mcp" || input["toolName"] != mcptools.OpenToolName {
		t.Fatalf("unpaid open_session: %v", got)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(text(t, res)), &fromText); err != nil || !sameJSON(fromText, got) {
		t.Errorf("text %s is not the structuredContent's JSON", text(t, res))
	}
	if opened, _, _ := engine.counts(); opened != 0 {
		t.Fatalf("an unpaid open started %d containers", opened)
	}

	gate := &fakeGate{}
	srv.Gate = gate
	cs = mustMCP(t, srv)
	payload := map[string]any{"x402Version": 2.0, "payload": map[string]any{"signature": "0xab"}}
	res = callNamed(t, cs, mcptools.OpenToolName, map[string]any{}, mcp.Meta{mcptools.MetaPayment: payload})
	id, _ := structured(t, res)["session_id"].(string)
	if res.IsError || gate.requests[0].Signature == "" {
		t.Fatalf("paid open_session: %s; the gate saw %+v", text(t, res), gate.requests)
	}

	gate.mu.Lock()
	gate.checkErr = payErr
	gate.mu.Unlock()
	res = callTool(t, cs, map[string]any{"code": "x", "session_id": id}, nil)
	input, _ = bazaarOf(t, structured(t, res))["info"].(map[string]any)["input"].(map[string]any)
	if schema, _ := json.Marshal(input["inputSchema"]); !res.IsError || input["toolName"] != toolName || !strings.Contains(string(schema), "session_id") {
		t.Fatalf("unpaid call in a session: %s", text(t, res))
	}

	gate.mu.Lock()
	gate.checkErr = nil
	gate.mu.Unlock()
	engine.mu.Lock()
	engine.runErr = sandboxd.Errorf(sandboxd.CodeUnavailable, "runtime", "Docker is not reachable")
	engine.mu.Unlock()
	settled := gate.count(&gate.settled)
	res = callTool(t, cs, map[string]any{"code": "x", "session_id": id}, mcp.Meta{mcptools.MetaPayment: payload})
	if !res.IsError || gate.count(&gate.released) != 1 || gate.count(&gate.settled) != settled {
		t.Fatalf("a failed call: %q; released %d, settled %d more", text(t, res), gate.count(&gate.released), gate.count(&gate.settled)-settled)
	}
}
