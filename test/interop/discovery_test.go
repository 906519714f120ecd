package interop

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// discoveryResult is what discovery.mjs prints.
type discoveryResult struct {
	Error string `json:"error"`
	Valid struct {
		Valid  bool     `json:"valid"`
		Errors []string `json:"errors"`
	} `json:"valid"`
	Spec struct {
		Valid  bool     `json:"valid"`
		Errors []string `json:"errors"`
	} `json:"spec"`
	Discovered *struct {
		ResourceURL   string `json:"resourceUrl"`
		Method        string `json:"method"`
		ToolName      string `json:"toolName"`
		X402Version   int    `json:"x402Version"`
		DiscoveryInfo struct {
			Input  map[string]any `json:"input"`
			Output map[string]any `json:"output"`
		} `json:"discoveryInfo"`
	} `json:"discovered"`
	Bazaar map[string]any `json:"bazaar"`
}

// spellings is the language enum of the default configuration: the canonical names,
// then the aliases.
const spellings = `"enum":["python","javascript","typescript","bash","python3","js","node","ts","sh"]`

// TestDiscovery: the terms of POST /v1/code and of the MCP tools run_python,
// run_javascript and open_session carry the x402 bazaar extension, which the official
// @x402/extensions package validates (info against its schema, and the protocol's rules)
// and extracts from a PaymentPayload the official client built from the terms. The
// HTTP route's input schema lists every language and alias the default configuration
// runs; run_javascript's example is JavaScript, answered in node.
func TestDiscovery(t *testing.T) {
	mustInterop(t)
	svc := startService(t, instance("discovery"), false, paymentEnv([]string{
		"SANDBOX_PAYMENTS_SETTLEMENT=facilitator",
		"SANDBOX_PAYMENTS_FACILITATOR_URL=http://127.0.0.1:9", // never reached: no payment is made
	})...)
	key := writeKey(t, "payer.key", payer.key)
	for _, tc := range []struct{ name, kind, url, inputType, tool string }{
		{"http", "http", svc.URL + "/v1/code", "http", ""},
		{"mcp", "mcp", svc.URL + "/mcp", "mcp", "run_python"},
		{"mcp-javascript", "mcp", svc.URL + "/mcp", "mcp", "run_javascript"},
		{"mcp-open", "mcp-open", svc.URL + "/mcp", "mcp", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r discoveryResult
			args := []string{tc.kind, "--url", tc.url, "--key-file", key}
			if tc.tool != "" {
				args = append(args, "--tool", tc.tool)
			}
			runNode(t, time.Minute, &r, "discovery.mjs", args...)
			if r.Error != "" {
				t.Fatal(r.Error)
			}
			if !r.Valid.Valid || !r.Spec.Valid {
				t.Fatalf("validateDiscoveryExtension %+v, validateDiscoveryExtensionSpec %+v", r.Valid, r.Spec)
			}
			d := r.Discovered
			if d == nil || d.X402Version != 2 || d.DiscoveryInfo.Input["type"] != tc.inputType || d.DiscoveryInfo.Output["example"] == nil {
				t.Fatalf("extractDiscoveryInfo = %+v", d)
			}
			switch tc.kind {
			case "http":
				if d.Method != "POST" || d.DiscoveryInfo.Input["bodyType"] != "json" || d.ResourceURL != tc.url {
					t.Errorf("HTTP discovery %+v", d)
				}
				if raw, _ := json.Marshal(r.Bazaar["schema"]); !strings.Contains(string(raw), spellings) {
					t.Errorf("the HTTP bazaar's schema does not list %s: %s", spellings, raw)
				}
			case "mcp":
				// The package canonicalizes the resource as URL origin + path, and an
				// mcp:// URL (x402's convention for a tool) has the origin "null".
				if d.ToolName != tc.tool || d.DiscoveryInfo.Input["inputSchema"] == nil || !strings.HasSuffix(d.ResourceURL, "/"+tc.tool) {
					t.Errorf("MCP discovery %+v", d)
				}
				if example := d.DiscoveryInfo.Output["example"]; tc.tool == "run_javascript" && !exampleRuns(example, "javascript", "node") {
					t.Errorf("run_javascript's example answer %v, want javascript in node", example)
				}
			case "mcp-open":
				if d.ToolName != "open_session" || d.DiscoveryInfo.Input["inputSchema"] == nil || !strings.HasSuffix(d.ResourceURL, "/open_session") {
					t.Errorf("MCP discovery of open_session %+v", d)
				}
			}
		})
	}
}

// exampleRuns reports whether a bazaar's example answer is a run of lang in env.
func exampleRuns(example any, lang, env string) bool {
	answer, _ := example.(map[string]any)
	return answer["lang"] == lang && answer["environment"] == env
}
