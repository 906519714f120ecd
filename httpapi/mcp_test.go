package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sandboxd/x402"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
	"sandboxd/httpapi/mcptools"
)

// toolName is the run tool of Python, which every service lists while
// Python runs.
var toolName = mcptools.RunToolName(sandboxd.LanguagePython)

// mustMCP connects an MCP client (the Go SDK's) to the server's /mcp.
func mustMCP(t *testing.T, api *Server) *mcp.ClientSession {
	t.Helper()
	ts := httptest.NewServer(api.Handler())
	t.Cleanup(ts.Close)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callTool calls run_python with args and meta.
func callTool(t *testing.T, cs *mcp.ClientSession, args map[string]any, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: toolName, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	return res
}

// text is the text of a result's first content.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatal("result without content")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content[0] is %T, not text", res.Content[0])
	}
	return tc.Text
}

// structured is a result's structuredContent as a JSON object.
func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("structuredContent %s: %v", raw, err)
	}
	return m
}

// bazaarOf returns terms.extensions.bazaar, failing the test without it.
func bazaarOf(t *testing.T, terms map[string]any) map[string]any {
	t.Helper()
	ext, _ := terms["extensions"].(map[string]any)
	bazaar, _ := ext["bazaar"].(map[string]any)
	if bazaar == nil || bazaar["info"] == nil || bazaar["schema"] == nil {
		t.Fatalf("terms without extensions.bazaar (info and schema): %v", terms)
	}
	return bazaar
}

// termsDetails are a payment error's details quoting v2 (the
// PAYMENT-REQUIRED terms) and v1 (the HTTP body; none when nil).
func termsDetails(v2 map[string]any, v1 any) *sandboxd.PaymentDetails {
	terms := &sandboxd.PaymentTerms{}
	terms.V2, _ = json.Marshal(v2)
	if v1 != nil {
		terms.V1, _ = json.Marshal(v1)
	}
	return &sandboxd.PaymentDetails{Terms: terms}
}

// headerObject decodes the x402 header name in h (base64 of a JSON
// object), or returns nil when it is absent or does not decode.
func headerObject(h http.Header, name string) map[string]any {
	var obj map[string]any
	if x402.DecodeHeader(h.Get(name), &obj) != nil {
		return nil
	}
	return obj
}

// sameJSON reports whether a and b encode to the same JSON.
func sameJSON(a, b any) bool {
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && string(x) == string(y)
}

func TestMCPListsTheTool(t *testing.T) {
	cs := mustMCP(t, newTestServer(&fakeRunner{}, &fakeGate{}))
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != toolName {
		t.Fatalf("tools %+v, want only %s", tools.Tools, toolName)
	}
	tool := tools.Tools[0]
	a := tool.Annotations
	if a == nil || a.ReadOnlyHint || a.IdempotentHint || a.DestructiveHint == nil || *a.DestructiveHint ||
		a.OpenWorldHint == nil || *a.OpenWorldHint {
		t.Errorf("annotations %+v: want not read-only, not destructive, not idempotent, closed world", a)
	}
	in, _ := json.Marshal(tool.InputSchema)
	out, _ := json.Marshal(tool.OutputSchema)
	for _, want := range []string{`"code"`, `"stdin"`, `"required":["code"]`} {
		if !strings.Contains(string(in), want) {
			t.Errorf("input schema %s lacks %s", in, want)
		}
	}
	for _, want := range []string{`"cpu_ms"`, `"max_rss_kb"`, `"x402Version"`, `"anyOf"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output schema %s lacks %s", out, want)
		}
	}
}

func TestMCPRunsTheProgram(t *testing.T) {
	runner := &fakeRunner{result: sandboxd.Result{Stdout: "42\n", Status: sandboxd.StatusOK, Duration: 12 * time.Millisecond,
		Usage: &sandboxd.Usage{CPU: 9 * time.Millisecond, MaxRSSKB: 8200}}}
	gate := &fakeGate{}
	cs := mustMCP(t, newTestServer(runner, gate))
	res := callTool(t, cs, map[string]any{"code": "print(6*7)", "stdin": "in"}, nil)
	if res.IsError {
		t.Fatalf("tool error: %s", text(t, res))
	}
	checkAnswer42(t, structured(t, res))
	if txt := text(t, res); !strings.Contains(txt, "status ok, exit code 0") || !strings.Contains(txt, "42") {
		t.Errorf("text %q", txt)
	}
	if runner.jobs[0].Code != "print(6*7)" || runner.jobs[0].Stdin != "in" {
		t.Errorf("job %+v", runner.jobs[0])
	}
	if gate.settled != 1 || gate.requests[0].ResourceURL != "mcp://tool/run_python" {
		t.Errorf("settled %d, gate saw %+v", gate.settled, gate.requests)
	}
}

// TestMCPRefusesBadArguments: the tool refuses bad arguments (files and an
// unknown environment included) with the HTTP errors, as tool errors,
// running nothing.
func TestMCPRefusesBadArguments(t *testing.T) {
	runner := &fakeRunner{}
	cs := mustMCP(t, newFilesServer(runner, &fakeGate{}))
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "missing or empty"},
		{map[string]any{"code": 5}, "must be a string"},
		{map[string]any{"code": "x", "language": "python"}, "unknown field \"language\"; the fields are code, stdin, environment and files"},
		{map[string]any{"code": strings.Repeat("x", 101)}, "limit of 100"},
		{map[string]any{"code": "x", "stdin": strings.Repeat("x", 11)}, "limit of 10"},
		{map[string]any{"code": "x", "files": []any{file("../x", "")}}, `file "../x": the name has a "." or ".." part`},
		{map[string]any{"code": "x", "files": []any{file("a", "!!!!")}}, `file "a": content is not standard base64`},
		{map[string]any{"code": "x", "files": []any{file("a", ""), file("b", ""), file("c", ""), file("d", "")}}, "(max_files)"},
		{map[string]any{"code": "x", "environment": "gpu"}, "use one of: python, data"},
	} {
		res := callTool(t, cs, tc.args, nil)
		if !res.IsError || !strings.Contains(text(t, res), tc.want) || res.StructuredContent != nil {
			t.Errorf("%v: isError %v, %q; want a tool error with %q", tc.args, res.IsError, text(t, res), tc.want)
		}
	}
	if runner.ran() != 0 {
		t.Errorf("ran %d times", runner.ran())
	}
}

func TestMCPBusySaysWhenToRetry(t *testing.T) {
	runner := &fakeRunner{block: make(chan struct{})}
	api := newTestServer(runner, &fakeGate{})
	cs := mustMCP(t, api)
	release, err := api.Admitter.Admit(context.Background()) // the one slot
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	res := callTool(t, cs, map[string]any{"code": "x"}, nil)
	if !res.IsError || !strings.Contains(text(t, res), "retry the call in 1 s") {
		t.Errorf("busy: isError %v, %q", res.IsError, text(t, res))
	}
}

func TestMCPPayment(t *testing.T) {
	terms := map[string]any{"x402Version": 2.0, "error": "payment required",
		"resource": map[string]any{"url": "mcp://tool/run_python"},
		"accepts":  []any{map[string]any{"scheme": "exact", "network": "eip155:84532", "amount": "5000"}}}
	payErr := &sandboxd.Error{Code: sandboxd.CodePayment, Message: "payment required", Payment: termsDetails(terms, nil)}

	t.Run("no payment gets the terms", func(t *testing.T) {
		runner := &fakeRunner{}
		cs := mustMCP(t, newTestServer(runner, &fakeGate{checkErr: payErr}))
		res := callTool(t, cs, map[string]any{"code": "x"}, nil)
		if !res.IsError || runner.ran() != 0 {
			t.Fatalf("isError %v, ran %d", res.IsError, runner.ran())
		}
		got := structured(t, res)
		if got["x402Version"] != 2.0 || got["error"] != "payment required" {
			t.Errorf("structuredContent %v, want the terms", got)
		}
		bazaar := bazaarOf(t, got)
		if input, _ := bazaar["info"].(map[string]any)["input"].(map[string]any); input["type"] != "mcp" || input["toolName"] != toolName {
			t.Errorf("bazaar info %v, want the MCP form", bazaar["info"])
		}
		var fromText map[string]any
		if err := json.Unmarshal([]byte(text(t, res)), &fromText); err != nil || !sameJSON(fromText, got) {
			t.Errorf("text %s is not the structuredContent's JSON", text(t, res))
		}
	})
	t.Run("the payment reaches the gate as PAYMENT-SIGNATURE", func(t *testing.T) {
		gate := &fakeGate{}
		cs := mustMCP(t, newTestServer(&fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusOK}}, gate))
		payload := map[string]any{"x402Version": 2.0, "payload": map[string]any{"signature": "0xab"}}
		res := callTool(t, cs, map[string]any{"code": "x"}, mcp.Meta{"x402/payment": payload})
		if res.IsError {
			t.Fatalf("tool error: %s", text(t, res))
		}
		raw, err := base64.StdEncoding.DecodeString(gate.requests[0].Signature)
		var got map[string]any
		if err != nil || json.Unmarshal(raw, &got) != nil || got["x402Version"] != 2.0 {
			t.Errorf("gate saw PAYMENT-SIGNATURE %q", raw)
		}
	})
	t.Run("terms that are not a JSON object answer the message", func(t *testing.T) {
		garbled := &sandboxd.Error{Code: sandboxd.CodePayment, Message: "payment required",
			Payment: &sandboxd.PaymentDetails{Terms: &sandboxd.PaymentTerms{V2: json.RawMessage(`[1]`)}}}
		res := callTool(t, mustMCP(t, newTestServer(&fakeRunner{}, &fakeGate{checkErr: garbled})), map[string]any{"code": "x"}, nil)
		if !res.IsError || text(t, res) != "payment required" || res.StructuredContent != nil {
			t.Errorf("isError %v, %q, structuredContent %v", res.IsError, text(t, res), res.StructuredContent)
		}
	})
	t.Run("a payment that is not an object", func(t *testing.T) {
		runner := &fakeRunner{}
		cs := mustMCP(t, newTestServer(runner, &fakeGate{}))
		res := callTool(t, cs, map[string]any{"code": "x"}, mcp.Meta{"x402/payment": "0xab"})
		if !res.IsError || !strings.Contains(text(t, res), "PaymentPayload object") || runner.ran() != 0 {
			t.Errorf("isError %v %q ran %d", res.IsError, text(t, res), runner.ran())
		}
	})
	t.Run("a pending settlement says so with its transaction", func(t *testing.T) {
		pending := &sandboxd.Error{Code: sandboxd.CodePending, Message: "settlement pending",
			Payment: &sandboxd.PaymentDetails{Settlement: &sandboxd.Settlement{Version: 2, ErrorReason: "settlement_pending", Transaction: "0xabc"}}}
		runner := &fakeRunner{result: sandboxd.Result{Stdout: "secret answer", Status: sandboxd.StatusOK}}
		cs := mustMCP(t, newTestServer(runner, &fakeGate{settleErr: pending}))
		res := callTool(t, cs, map[string]any{"code": "x"}, nil)
		if !res.IsError || strings.Contains(text(t, res), "secret answer") || !strings.Contains(text(t, res), "pending") {
			t.Fatalf("isError %v, %q", res.IsError, text(t, res))
		}
		if settled, _ := res.Meta["x402/payment-response"].(map[string]any); settled["transaction"] != "0xabc" {
			t.Errorf("_meta %v, want the pending settlement's transaction", res.Meta)
		}
	})
	t.Run("a failed settlement withholds the answer", func(t *testing.T) {
		failed := *payErr
		failed.Payment = termsDetails(terms, nil)
		failed.Payment.Settlement = &sandboxd.Settlement{Version: 2, ErrorReason: "insufficient_funds"}
		runner := &fakeRunner{result: sandboxd.Result{Stdout: "secret answer", Status: sandboxd.StatusOK}}
		cs := mustMCP(t, newTestServer(runner, &fakeGate{settleErr: &failed}))
		res := callTool(t, cs, map[string]any{"code": "x"}, nil)
		if !res.IsError || strings.Contains(text(t, res), "secret answer") || structured(t, res)["x402Version"] != 2.0 {
			t.Fatalf("isError %v, %q", res.IsError, text(t, res))
		}
		if settled, _ := res.Meta["x402/payment-response"].(map[string]any); settled["errorReason"] != "insufficient_funds" {
			t.Errorf("_meta %v, want the failed settlement", res.Meta)
		}
	})
	t.Run("the service's failure is not charged", func(t *testing.T) {
		gate := &fakeGate{}
		runner := &fakeRunner{err: sandboxd.Errorf(sandboxd.CodeUnavailable, "runtime", "Docker is not reachable")}
		cs := mustMCP(t, newTestServer(runner, gate))
		res := callTool(t, cs, map[string]any{"code": "x"}, nil)
		if !res.IsError || !strings.Contains(text(t, res), "Docker is not reachable") || gate.released != 1 || gate.settled != 0 {
			t.Errorf("isError %v %q; released %d, settled %d; want released, not settled", res.IsError, text(t, res), gate.released, gate.settled)
		}
	})
	t.Run("the settlement comes back in _meta", func(t *testing.T) {
		gate := &fakeGate{settlement: &sandboxd.Settlement{Version: 2, Success: true, Transaction: "0x01"}}
		cs := mustMCP(t, newTestServer(&fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusOK}}, gate))
		res := callTool(t, cs, map[string]any{"code": "x"}, nil)
		if settled, _ := res.Meta["x402/payment-response"].(map[string]any); res.IsError || settled["transaction"] != "0x01" {
			t.Fatalf("isError %v meta %v", res.IsError, res.Meta)
		}
	})
}
