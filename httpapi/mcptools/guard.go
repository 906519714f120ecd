package mcptools

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
	"sandboxd/httpapi/ingress"
	"sandboxd/internal/jsonkeys"
)

// MaxBatch bounds the messages of one JSON-RPC batch. MCP since
// 2025-06-18 has no batches and the official clients send none; an older
// client sends a handful. Each message of a batch is answered in the one
// answer, so an unbounded batch of unpaid tools/call would buy, for one
// small body, hundreds of 402 terms built in memory.
const MaxBatch = 16

// rpcInvalidRequest is JSON-RPC's error code for a request it refuses as a
// whole.
const rpcInvalidRequest = -32600

// guard reads an MCP request's body, at most limit bytes (Service.Read,
// which refuses it before the SDK decodes it when it breaks the API's
// bounds of a message), and answers it with a JSON-RPC error when it is
// refused. A call for a session another replica holds is forwarded there
// (located). A run tool call's arguments are lifted out of the body
// (liftArguments), the rest of which must be small; the body goes on to
// next. The body's room in the body budget is held until the tool's run
// is admitted or, for any other message, until next has answered.
func (s *server) guard(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The SDK writes its own JSON answers: they say nosniff too.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		body, hold, err := s.svc.Read(w, r, limit)
		defer hold.Release()
		if err == nil && s.located(w, r, body) {
			return
		}
		var args []byte
		if err == nil {
			body, args, err = liftArguments(body)
		}
		if err != nil {
			if r.Context().Err() == nil || !errors.Is(err, r.Context().Err()) {
				s.log.Debug("mcp request refused", "err", err)
				WriteError(w, s.svc, err)
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r.WithContext(withToolArgs(ingress.WithHold(r.Context(), hold), args)))
	})
}

// located serves, or forwards (Service.Locate), a tools/call of a tool
// that acts on a session by its session_id argument (close_session and the
// run tools) for a session this replica does not hold; it reports whether
// it answered. A session whose replica is gone is the tool's error, as a
// 404 of the HTTP route. A batch is never forwarded: its calls are served
// here.
func (s *server) located(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if !s.fleet || spanString(body, "method") != "tools/call" {
		return false
	}
	tool := spanString(body, "params.name")
	if !isRunTool(tool) && tool != CloseToolName {
		return false
	}
	id := spanString(body, "params.arguments.session_id")
	if id == "" {
		return false
	}
	done, err := s.svc.Locate(w, r, body, id)
	if err != nil {
		s.writeToolResult(w, body, s.toolError(tool, err))
		return true
	}
	return done
}

// writeToolResult answers the JSON-RPC request body with result, as the
// SDK would.
func (s *server) writeToolResult(w http.ResponseWriter, body []byte, result *mcp.CallToolResult) {
	id := json.RawMessage("null")
	if start, end := jsonkeys.Span(body, "id"); start >= 0 {
		id = json.RawMessage(body[start:end])
	}
	writeRPC(w, http.StatusOK, struct {
		JSONRPC string              `json:"jsonrpc"`
		ID      json.RawMessage     `json:"id"`
		Result  *mcp.CallToolResult `json:"result"`
	}{"2.0", id, result})
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

// WriteError answers err, a request refused before any tool read it, as
// JSON-RPC's Invalid Request with the HTTP status svc maps err to and,
// when it says when to retry, Retry-After: for the refusals of the API's
// own middleware, and the guard's.
func WriteError(w http.ResponseWriter, svc Service, err error) {
	status, retry := svc.Refusal(err)
	if retry > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retry))
	}
	writeRPC(w, status, rpcError{JSONRPC: "2.0",
		Error: rpcErrorDetail{Code: rpcInvalidRequest, Message: sandboxd.ErrorMessage(err)}})
}

// writeRPC answers v, a JSON-RPC answer, with the status, as the SDK
// writes its own: JSON with <, > and & escaped (an error echoes what the
// caller sent), nosniff.
func writeRPC(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"internal error; it has been logged"}`)
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
