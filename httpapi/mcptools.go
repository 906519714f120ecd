package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"sandboxd"
	"sandboxd/httpapi/ingress"
	"sandboxd/httpapi/mcptools"
	"sandboxd/internal/jsonkeys"
)

// MCP is package mcptools, given the Server as its Service (mcpService):
// the tools decode, validate, pay, run and fail by the routes' own rules
// and flows, described from the API's schemas (tools_doc.go), with
// statuses from the one mapping (errors.go); mcptools_calls.go holds the
// flows as the tools call them.

// mcpHandler serves MCP at mcptools.Path.
func (s *Server) mcpHandler() http.Handler {
	return mcptools.New(mcpService{s}, mcptools.Options{Log: s.Log, Version: s.Version.Version,
		MaxBodyBytes: s.MaxBodyBytes, Fleet: s.Fleet != nil})
}

// mcpService is the Server as the MCP tools call it.
type mcpService struct{ s *Server }

var _ mcptools.Service = mcpService{}

// Tools describes a run tool per language and, with sessions on, the
// session tools.
func (m mcpService) Tools() mcptools.Tools {
	var tools mcptools.Tools
	for _, lang := range m.s.toolLanguages() {
		tools.Run = append(tools.Run, m.s.runTool(lang))
	}
	if m.s.Sessions != nil {
		tools.Open, tools.Close = m.s.openSessionTool(), m.s.closeSessionTool()
	}
	return tools
}

// Read reads an MCP request's body as every body is read (ingress), then
// refuses, before the SDK decodes it, one that breaks rpcLimits (checkRPC).
func (m mcpService) Read(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *ingress.Hold, error) {
	body, hold, err := m.s.readBody(w, r, limit)
	if err == nil {
		err = checkRPC(body, m.s.rpcLimits())
	}
	return body, hold, err
}

// checkRPC refuses, before the SDK decodes it, a JSON-RPC body that breaks
// lim (rpcLimits): nested too deep, a batch of too many messages, an array
// or object too wide anywhere, _meta included, or tool arguments over the
// request's bounds. Syntax is left to the SDK. The scan allocates nothing;
// the SDK's decoder would build every level and item, _meta included.
func checkRPC(body []byte, lim jsonkeys.Limits) error {
	e := jsonkeys.Scan(bytes.TrimSpace(body), lim)
	if e != nil && e.Kind == jsonkeys.TooMany && e.Bound == "batch" {
		return sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.mcp",
			"MCP request refused: a JSON-RPC batch may hold at most %d messages; send the calls one by one", mcptools.MaxBatch)
	}
	return scanRefusal(e, "httpapi.mcp", "MCP request")
}

// Locate forwards the call r for session id, whose body the guard read,
// to the replica that holds the session (place).
func (m mcpService) Locate(w http.ResponseWriter, r *http.Request, body []byte, id string) (bool, error) {
	where, to, err := m.s.place(r, id)
	if err != nil || where != forwardThere {
		return false, err
	}
	m.s.forward(w, r, to, body)
	return true, nil
}

// Refusal is err's status by statusOf and its Retry-After by retrySeconds.
func (m mcpService) Refusal(err error) (status, retryAfter int) {
	var e *sandboxd.Error
	if errors.As(err, &e) {
		retryAfter = retrySeconds(e.RetryAfter)
	}
	return statusOf(sandboxd.ErrorCode(err)), retryAfter
}

// Terms are the v2 terms err carries with tool's declared extensions.
func (m mcpService) Terms(tool string, err error) map[string]any {
	terms := paymentTerms(err)
	if terms != nil {
		addExtensions(terms, m.s.declaredExtensions(tool))
	}
	return terms
}

// Report is settleReport's report of s as a JSON object.
func (m mcpService) Report(s *sandboxd.Settlement) map[string]any {
	if s == nil {
		return nil
	}
	_, r := settleReport(s)
	raw, _ := json.Marshal(r) // strings and a bool: it always encodes
	return jsonObject(raw)
}

// paymentTerms returns the x402 v2 PaymentRequired that err carries as a
// JSON object, or nil when err carries none.
func paymentTerms(err error) map[string]any {
	var e *sandboxd.Error
	if !errors.As(err, &e) || e.Code != sandboxd.CodePayment || e.Payment == nil || e.Payment.Terms == nil {
		return nil
	}
	return jsonObject(e.Payment.Terms.V2)
}

// openToolExtensions are the extensions declared for open_session.
func (s *Server) openToolExtensions() map[string]any {
	return s.withPaymentID(map[string]any{bazaarKey: toolBazaar(s.openSessionTool(), map[string]any{"language": "python"},
		exampleSession(), s.sessionSchema())})
}

// declaredExtensions are the extensions declared for a paid tool's terms.
func (s *Server) declaredExtensions(tool string) map[string]any {
	if lang, ok := mcptools.RunToolLanguage(tool); ok {
		return s.toolExtensions(lang)
	}
	if tool == mcptools.OpenToolName {
		return s.openToolExtensions()
	}
	return nil
}
