package interop

import (
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
}

// TestDiscovery: the terms of POST /v1/code and of the MCP tools run_python and
// open_session carry the x402 bazaar extension, which the official @x402/extensions
// package validates (info against its schema, and the protocol's rules) and extracts
// from a PaymentPayload the official client built from the terms.
func TestDiscovery(t *testing.T) {
	mustInterop(t)
	svc := startService(t, instance("discovery"), false, paymentEnv([]string{
		"SANDBOX_PAYMENTS_SETTLEMENT=facilitator",
		"SANDBOX_PAYMENTS_FACILITATOR_URL=http://127.0.0.1:9", // never reached: no payment is made
	})...)
	key := writeKey(t, "payer.key", payer.key)
	for _, tc := range []struct{ kind, url, inputType string }{
		{"http", svc.URL + "/v1/code", "http"},
		{"mcp", svc.URL + "/mcp", "mcp"},
		{"mcp-open", svc.URL + "/mcp", "mcp"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			var r discoveryResult
			runNode(t, time.Minute, &r, "discovery.mjs", tc.kind, "--url", tc.url, "--key-file", key)
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
			case "mcp":
				// The package canonicalizes the resource as URL origin + path, and an
				// mcp:// URL (x402's convention for a tool) has the origin "null".
				if d.ToolName != "run_python" || d.DiscoveryInfo.Input["inputSchema"] == nil || !strings.HasSuffix(d.ResourceURL, "/run_python") {
					t.Errorf("MCP discovery %+v", d)
				}
			case "mcp-open":
				if d.ToolName != "open_session" || d.DiscoveryInfo.Input["inputSchema"] == nil || !strings.HasSuffix(d.ResourceURL, "/open_session") {
					t.Errorf("MCP discovery of open_session %+v", d)
				}
			}
		})
	}
}
