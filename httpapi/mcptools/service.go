// Package mcptools serves the API's MCP tools over Streamable HTTP: a run
// tool per language (run_python, …) and, with sessions on, open_session
// and close_session. It owns what is MCP's own: the SDK server, the guard
// of each JSON-RPC message (a batch bound, the run tool's arguments lifted
// out before the SDK decodes them), x402's MCP transport (the payment in
// _meta["x402/payment"], the report in _meta["x402/payment-response"]), the
// tool results and tool errors, and the tool results of retries.
//
// Everything else is the API's, reached through Service, which httpapi
// implements: the arguments are decoded and validated, paid and run by the
// HTTP routes' own flows, the tools are described from the API's schemas,
// and an error's status is httpapi's one mapping. So this package never
// imports httpapi. Its errors' ops stay httpapi's ("httpapi.mcp"), the
// calls being the API's, so its logs read as before. (The package is not
// named mcp: its files import the SDK's package mcp.)
package mcptools

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
	"sandboxd/httpapi/ingress"
	"sandboxd/httpapi/wire"
)

// Service is the API as the tools call it. Its flows return
// *sandboxd.Error values with codes, never a status.
type Service interface {
	// Tools describes the tools to list, from the API's schemas.
	Tools() Tools

	// Run runs a call of lang's run tool: its arguments (args, lifted out
	// of the message or as the SDK read them) decoded and validated as
	// POST /v1/code's body, or, when they name a session_id, as a call in
	// that session, then paid by pay through the route's flow. A retry of
	// a call already answered comes back as a Delivery with Replay set.
	Run(ctx context.Context, lang string, args json.RawMessage, pay Payment) (Delivery, error)

	// Open opens a session as POST /v1/sessions does, args read as its
	// body. An opening whose settlement is pending is an error with the
	// Delivery's Open naming the session kept.
	Open(ctx context.Context, args json.RawMessage, pay Payment) (Delivery, error)

	// Close ends the session args names, as DELETE /v1/sessions/{id}
	// does, and returns its id.
	Close(ctx context.Context, args json.RawMessage) (string, error)

	// Read reads an MCP request's body, at most limit bytes, as the API
	// reads a body (its room in the body budget is held by the Hold), and
	// refuses one that breaks the API's bounds of an MCP message.
	Read(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *ingress.Hold, error)

	// Locate serves, by forwarding it whole, a call for session id that
	// another replica of the fleet holds, and reports whether it did; the
	// error is a refusal of the call (a session ended elsewhere).
	Locate(w http.ResponseWriter, r *http.Request, body []byte, id string) (bool, error)

	// Refusal is err's HTTP status by the API's one mapping and the
	// seconds its Retry-After says (0: none).
	Refusal(err error) (status, retryAfter int)

	// Terms are the x402 v2 terms err carries, with tool's declared
	// extensions, as a JSON object; nil when err carries none.
	Terms(tool string, err error) map[string]any

	// Report is the settlement report s as its payer's x402 version reads
	// it, as a JSON object; nil for no settlement.
	Report(s *sandboxd.Settlement) map[string]any
}

// Tools are the tools a Service lists.
type Tools struct {
	// Run holds one run tool per language, each named RunToolName(lang).
	Run []*mcp.Tool
	// Open and Close are the session tools; nil when sessions are off.
	Open, Close *mcp.Tool
}

// Payment is the payment request of a paid tool's call: its resource and
// transport, and _meta["x402/payment"] as the gate reads PAYMENT-SIGNATURE
// over HTTP. Err refuses a payload that is no PaymentPayload; the flows
// return it once the arguments are valid, as a route reads its body before
// its payment.
type Payment struct {
	Request sandboxd.PaymentRequest
	Err     error
}

// Delivery is a paid call's answer: exactly one of Run, Call or Open, with
// Body, its JSON as rendered before the settlement (the structuredContent),
// and the settlement's report, if any. A retry is a Delivery with Replay
// and Stored (the answer read back) set instead.
type Delivery struct {
	Run  *wire.CodeResponse
	Call *wire.SessionCodeResponse
	Open *wire.SessionResponse
	// Files are the files out as the runner gave them: the image blocks.
	Files      []sandboxd.File
	Body       json.RawMessage
	Settlement *sandboxd.Settlement

	Replay sandboxd.Replay
	Stored *sandboxd.StoredAnswer
}
