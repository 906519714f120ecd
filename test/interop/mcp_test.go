package interop

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// mcpTimeout bounds one run of test/interop/mcp.mjs.
const mcpTimeout = 150 * time.Second

// mcpTool is a tool as the official MCP client lists it.
type mcpTool struct {
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	InputSchema  map[string]any `json:"inputSchema"`
	OutputSchema map[string]any `json:"outputSchema"`
	Annotations  map[string]any `json:"annotations"`
}

// mcpResult is a tools/call result as the official MCP client returns it, or the
// exception it threw (Thrown).
type mcpResult struct {
	Thrown  string `json:"thrown"`
	IsError bool   `json:"isError"`
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
	} `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	Meta              map[string]any `json:"_meta"`
}

// mcpOutcome is what mcp.mjs prints.
type mcpOutcome struct {
	Error   string          `json:"error"`
	Tools   []mcpTool       `json:"tools"`
	Result  mcpResult       `json:"result"`
	Unpaid  mcpResult       `json:"unpaid"`
	Paid    mcpResult       `json:"paid"`
	Replay  mcpResult       `json:"replayed"`
	Payload json.RawMessage `json:"payload"`
}

// runMCP runs a scenario of mcp.mjs and fails the test on its error.
func runMCP(t *testing.T, scenario, url string, extra ...string) mcpOutcome {
	t.Helper()
	var out mcpOutcome
	runNode(t, mcpTimeout, &out, "mcp.mjs", append([]string{scenario, "--url", url}, extra...)...)
	if out.Error != "" {
		t.Fatalf("mcp.mjs %s: %s", scenario, out.Error)
	}
	return out
}

// checkTools checks the tool list as the official client parsed it: a run tool per
// language (node runs javascript, typescript and bash by default), each described as
// its language, and the session tools (sessions are on by default).
func checkTools(t *testing.T, tools []mcpTool) {
	t.Helper()
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	want := "close_session,open_session,run_bash,run_javascript,run_python,run_typescript"
	if strings.Join(names, ",") != want {
		t.Fatalf("tools %v, want %s", names, want)
	}
	for name, says := range map[string]string{"run_python": "Python 3.11", "run_javascript": "JavaScript program on Node.js 24",
		"run_typescript": "TypeScript program, transpiled", "run_bash": "Bash script"} {
		tool := toolNamed(tools, name)
		if !strings.Contains(tool.Description, says) {
			t.Errorf("%s's description %q does not say %q", name, tool.Description, says)
		}
		a := tool.Annotations
		if a["readOnlyHint"] != false || a["destructiveHint"] != false || a["idempotentHint"] != false || a["openWorldHint"] != false {
			t.Errorf("%s's annotations %v", name, a)
		}
	}
	for _, tool := range tools {
		if tool.InputSchema["type"] != "object" || tool.OutputSchema["type"] != "object" {
			t.Errorf("%s's schemas: input %v output %v", tool.Name, tool.InputSchema, tool.OutputSchema)
		}
	}
}

// toolNamed is the tool of that name among tools (a zero tool when there is none).
func toolNamed(tools []mcpTool, name string) mcpTool {
	for _, tool := range tools {
		if tool.Name == name {
			return tool
		}
	}
	return mcpTool{}
}

// runPython is run_python among tools.
func runPython(tools []mcpTool) mcpTool { return toolNamed(tools, "run_python") }

// checkRun checks a delivered run of mcp.mjs's program.
func checkRun(t *testing.T, r mcpResult) {
	t.Helper()
	if r.Thrown != "" || r.IsError {
		t.Fatalf("call: thrown %q, isError %v, content %+v", r.Thrown, r.IsError, r.Content)
	}
	sc := r.StructuredContent
	if sc["stdout"] != "HI\n42\n" || sc["status"] != "ok" || sc["exit_code"] != 0.0 || sc["cpu_ms"] == nil || sc["max_rss_kb"] == nil {
		t.Errorf("structuredContent %v", sc)
	}
	if len(r.Content) == 0 || r.Content[0].Type != "text" || !strings.Contains(r.Content[0].Text, "status ok") {
		t.Errorf("content %+v", r.Content)
	}
}

// TestMCPOfficialClient: the official MCP client connects over Streamable HTTP to the
// real binary in free mode, lists the tools and calls run_python with stdin.
func TestMCPOfficialClient(t *testing.T) {
	mustInterop(t)
	svc := startService(t, instance("mcp-free"), true)
	out := runMCP(t, "call", svc.URL+"/mcp")
	checkTools(t, out.Tools)
	checkRun(t, out.Result)
	if out.Result.Meta["x402/payment-response"] != nil {
		t.Errorf("a free call carries a settlement: %v", out.Result.Meta)
	}
}

// TestMCPPaid: in paid mode on anvil (the service settling on chain), the official MCP
// client, used as an agent uses it, gets the terms as a tool error whose
// structuredContent passes its own output-schema check, pays with a PaymentPayload
// built by the official @x402/evm client scheme in _meta["x402/payment"], and gets the
// run with the settlement in _meta["x402/payment-response"]; exactly one transfer
// moves. The same payment sent again with the same arguments gets the same result back
// as a retry; over HTTP afterwards, another request, it is refused.
func TestMCPPaid(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "onchain", nil)
	svc := startService(t, instance("mcp-paid"), true, paymentEnv(env)...)
	before := snapshot(t, c)
	out := runMCP(t, "pay", svc.URL+"/mcp", "--key-file", writeKey(t, "payer.key", payer.key))
	checkTools(t, out.Tools)

	unpaid := out.Unpaid
	if unpaid.Thrown != "" || !unpaid.IsError {
		t.Fatalf("unpaid call: thrown %q, isError %v; want a tool error the client accepts", unpaid.Thrown, unpaid.IsError)
	}
	terms := unpaid.StructuredContent
	resource, _ := terms["resource"].(map[string]any)
	if terms["x402Version"] != 2.0 || resource["url"] != "mcp://tool/run_python" || terms["accepts"] == nil {
		t.Errorf("terms %v", terms)
	}
	var fromText map[string]any
	if len(unpaid.Content) == 0 || json.Unmarshal([]byte(unpaid.Content[0].Text), &fromText) != nil ||
		!jsonEqual(fromText, terms) {
		t.Errorf("content[0].text %+v is not the terms' JSON", unpaid.Content)
	}

	checkRun(t, out.Paid)
	var settled settleResponse
	raw, _ := json.Marshal(out.Paid.Meta["x402/payment-response"])
	if json.Unmarshal(raw, &settled) != nil || !settled.Success || !txHash.MatchString(settled.Transaction) ||
		!strings.EqualFold(settled.Payer, payer.address) {
		t.Fatalf(`_meta["x402/payment-response"] = %s`, raw)
	}
	waitFor(5*time.Second, func() bool { return c.balance(t, payee.address) != before.payee })
	if hash := expectMoved(t, c, before, payer.address); !strings.EqualFold(hash, settled.Transaction) {
		t.Errorf("the transfer is in %s, the settlement names %s", hash, settled.Transaction)
	}

	// The same PaymentPayload again over MCP, with the same arguments: the answer again.
	checkMCPReplayed(t, out.Paid, out.Replay)
	// The same PaymentPayload over HTTP, after it bought an answer over MCP.
	replay := payResult{}
	replay.SentHeader.Name = "PAYMENT-SIGNATURE"
	replay.SentHeader.Value = base64.StdEncoding.EncodeToString(out.Payload)
	t.Run("replay over HTTP", func(t *testing.T) { testReplay(t, c, svc.URL+"/v1/code", replay, false) })
}

// jsonEqual reports whether a and b encode to the same JSON, objects compared by their
// keys whatever their order (a struct and the map decoded from it are equal).
func jsonEqual(a, b any) bool {
	x, errX := canonicalJSON(a)
	y, errY := canonicalJSON(b)
	return errX == nil && errY == nil && x == y
}

// canonicalJSON is v encoded, decoded and encoded again: objects with sorted keys.
func canonicalJSON(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return "", err
	}
	raw, err = json.Marshal(decoded)
	return string(raw), err
}

// checkMCPReplayed checks that a paid MCP result's payload sent again with the same
// arguments got the same result back: the same structuredContent and settle
// report, and _meta["sandboxd/replayed"].
func checkMCPReplayed(t *testing.T, paid, replayed mcpResult) {
	t.Helper()
	if replayed.Thrown != "" || replayed.IsError || replayed.Meta["sandboxd/replayed"] != true ||
		!jsonEqual(replayed.StructuredContent, paid.StructuredContent) ||
		!jsonEqual(replayed.Meta["x402/payment-response"], paid.Meta["x402/payment-response"]) {
		t.Errorf("the payment sent again over MCP: thrown %q, isError %v, _meta %v; want the paid result again",
			replayed.Thrown, replayed.IsError, replayed.Meta)
	}
}
