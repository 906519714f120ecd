package interop

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// mcpTimeout bounds one run of interop/mcp.mjs.
const mcpTimeout = 150 * time.Second

// mcpTool is a tool as the official MCP client lists it.
type mcpTool struct {
	Name         string         `json:"name"`
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
		Type string `json:"type"`
		Text string `json:"text"`
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

// checkTools checks the tool list as the official client parsed it.
func checkTools(t *testing.T, tools []mcpTool) {
	t.Helper()
	if len(tools) != 1 || tools[0].Name != "run_python" {
		t.Fatalf("tools %+v, want run_python alone", tools)
	}
	a := tools[0].Annotations
	if a["readOnlyHint"] != false || a["destructiveHint"] != false || a["idempotentHint"] != false || a["openWorldHint"] != false {
		t.Errorf("annotations %v", a)
	}
	if tools[0].InputSchema["type"] != "object" || tools[0].OutputSchema["type"] != "object" {
		t.Errorf("schemas: input %v output %v", tools[0].InputSchema, tools[0].OutputSchema)
	}
}

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
	out := runMCP(t, "call", svc.url+"/mcp")
	checkTools(t, out.Tools)
	checkRun(t, out.Result)
	if out.Result.Meta["x402/payment-response"] != nil {
		t.Errorf("a free call carries a settlement: %v", out.Result.Meta)
	}
}
