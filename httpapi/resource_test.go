package httpapi

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"sandboxd"
	"sandboxd/httpapi/mcptools"
)

// TestResourceURLIsNotTheCallers: X-Forwarded-Host and -Proto name the
// resource a payment pays for only when the peer is a trusted proxy, and
// server.public_url names it alone when set; the MCP tool's resource is
// its own whatever the headers say. Before, any payer's X-Forwarded-Host
// went into the 402's terms and to the facilitator.
func TestResourceURLIsNotTheCallers(t *testing.T) {
	proxy := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	cases := []struct {
		name, peer, public string
		trusted            []netip.Prefix
		path, want         string
	}{
		{"untrusted peer", "192.0.2.1:1234", "", nil, "/v1/code", "http://sandbox.example/v1/code"},
		{"untrusted peer beside a trusted proxy", "192.0.2.1:1234", "", proxy, "/v1/code", "http://sandbox.example/v1/code"},
		{"trusted proxy", "10.1.2.3:1234", "", proxy, "/v1/code", "https://pay-here.evil.example/v1/code"},
		{"public_url over a trusted proxy", "10.1.2.3:1234", "https://api.example/sbx", proxy, "/v1/code", "https://api.example/sbx/v1/code"},
		{"public_url over an untrusted peer", "192.0.2.1:1234", "https://api.example", nil, "/v1/code", "https://api.example/v1/code"},
		{"mcp, untrusted", "192.0.2.1:1234", "", nil, "/mcp", mcptools.ToolResource(sandboxd.LanguagePython)},
		{"mcp, trusted proxy", "10.1.2.3:1234", "https://api.example", proxy, "/mcp", mcptools.ToolResource(sandboxd.LanguagePython)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gate := &fakeGate{}
			api := newTestServer(&fakeRunner{}, gate)
			api.PublicURL, api.TrustedProxies = c.public, c.trusted
			req := httptest.NewRequest("POST", c.path, strings.NewReader(mcpOr(c.path, `{"code":"print(1)"}`)))
			req.RemoteAddr, req.Host = c.peer, "sandbox.example"
			req.Header.Set("X-Forwarded-Host", "pay-here.evil.example")
			req.Header.Set("X-Forwarded-Proto", "https")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			rec := httptest.NewRecorder()
			api.Handler().ServeHTTP(rec, req)
			if len(gate.requests) != 1 {
				t.Fatalf("the gate was asked %d times: %d %s", len(gate.requests), rec.Code, rec.Body)
			}
			if got := gate.requests[0].ResourceURL; got != c.want {
				t.Errorf("resource %q, want %q", got, c.want)
			}
		})
	}
}
