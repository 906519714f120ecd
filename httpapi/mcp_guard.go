package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"sandboxd"
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
// it with a JSON-RPC error before the SDK decodes it when it nests deeper
// than jsonkeys.MaxDepth (the scan allocates nothing per level; the SDK's
// decoder would build every level, _meta included) or is a batch of more
// than mcpMaxBatch messages. Any other body goes on to next as read. The
// body's room in the body budget is held until the tool's run is admitted
// (execute) or, for any other message, until next has answered.
func (s *Server) guardMCP(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, hold, err := s.readBody(w, r, limit)
		defer hold.release()
		if err == nil {
			err = checkRPC(body)
		}
		if err != nil {
			if r.Context().Err() == nil || !errors.Is(err, r.Context().Err()) {
				s.Log.Debug("mcp request refused", "err", err)
				writeRPCError(w, err)
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r.WithContext(withBodyHold(r.Context(), hold)))
	})
}

// checkRPC refuses a JSON-RPC body nested too deep or batching too many
// messages. Syntax is left to the SDK.
func checkRPC(body []byte) error {
	if e := jsonkeys.CheckDepth(body, jsonkeys.MaxDepth); e != nil {
		return sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.mcp", "MCP request refused: %s", e.Describe(""))
	}
	if n := batchLen(body, mcpMaxBatch+1); n > mcpMaxBatch {
		return sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.mcp",
			"MCP request refused: a JSON-RPC batch may hold at most %d messages; send the calls one by one", mcpMaxBatch)
	}
	return nil
}

// batchLen counts the messages of body when it is a JSON-RPC batch (an
// array), stopping at stop; it is 0 for anything else.
func batchLen(body []byte, stop int) int {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return 0
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil {
		return 0
	}
	n := 0
	for n < stop && dec.More() {
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
		n++
	}
	return n
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
	writeJSON(w, statusOf(sandboxd.ErrorCode(err)), rpcError{JSONRPC: "2.0",
		Error: rpcErrorDetail{Code: rpcInvalidRequest, Message: sandboxd.ErrorMessage(err)}})
}
