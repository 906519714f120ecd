package httpapi

import (
	"bytes"
	"errors"
	"io"
	"net/http"

	"sandboxd"
	"sandboxd/httpapi/ingress"
	"sandboxd/internal/jsonkeys"
)

// mcpMaxBatch bounds the messages of one JSON-RPC batch. MCP since
// 2025-06-18 has no batches and the official clients send none; an older
// client sends a handful. Each message of a batch is answered in the one
// answer, so an unbounded batch of unpaid tools/call would buy, for one
// small body, hundreds of 402 terms built in memory.
const mcpMaxBatch = 16

// rpcInvalidRequest is JSON-RPC's error code for a request it refuses as a
// whole.
const rpcInvalidRequest = -32600

// guardMCP reads an MCP request's body, at most limit bytes, and refuses
// it with a JSON-RPC error before the SDK decodes it when it breaks the
// scan's bounds (checkRPC: the scan allocates nothing; the SDK's decoder
// would build every level and item, _meta included) or is a batch of more
// than mcpMaxBatch messages. A run_python call's arguments are lifted out
// of the body (liftArguments), the rest of which must be small; the body
// goes on to next. The body's room in the body budget is held until the
// tool's run is admitted (execute) or, for any other message, until next
// has answered.
func (s *Server) guardMCP(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The SDK writes its own JSON answers: they say nosniff too.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		body, hold, err := s.readBody(w, r, limit)
		defer hold.Release()
		if err == nil {
			err = checkRPC(body, s.rpcLimits())
		}
		if err == nil && s.mcpLocated(w, r, body) {
			return
		}
		var args []byte
		if err == nil {
			body, args, err = liftArguments(body)
		}
		if err != nil {
			if r.Context().Err() == nil || !errors.Is(err, r.Context().Err()) {
				s.Log.Debug("mcp request refused", "err", err)
				writeRPCError(w, err)
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r.WithContext(withToolArgs(ingress.WithHold(r.Context(), hold), args)))
	})
}

// checkRPC refuses, before the SDK decodes it, a JSON-RPC body that breaks
// lim (rpcLimits): nested too deep, a batch of too many messages, an array
// or object too wide anywhere, _meta included, or tool arguments over the
// request's bounds. Syntax is left to the SDK.
func checkRPC(body []byte, lim jsonkeys.Limits) error {
	e := jsonkeys.Scan(bytes.TrimSpace(body), lim)
	if e != nil && e.Kind == jsonkeys.TooMany && e.Bound == "batch" {
		return sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.mcp",
			"MCP request refused: a JSON-RPC batch may hold at most %d messages; send the calls one by one", mcpMaxBatch)
	}
	return scanRefusal(e, "httpapi.mcp", "MCP request")
}

// rpcError is a JSON-RPC error answer with no id: the request was refused
// before its id was read.
type rpcError struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      any            `json:"id"`
	Error   rpcErrorDetail `json:"error"`
}

// rpcErrorDetail is the error member of rpcError.
type rpcErrorDetail struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// writeRPCError answers err, refused before the SDK read the request, as
// JSON-RPC's Invalid Request with the HTTP status of err's code and, when
// it says when to retry, Retry-After.
func writeRPCError(w http.ResponseWriter, err error) {
	setRetryAfter(w.Header(), err)
	writeJSONEscaped(w, statusOf(sandboxd.ErrorCode(err)), rpcError{JSONRPC: "2.0",
		Error: rpcErrorDetail{Code: rpcInvalidRequest, Message: sandboxd.ErrorMessage(err)}})
}
