package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
	"sandboxd/internal/jsonkeys"
)

// hopDialTimeout bounds the connection to another replica: a replica that
// does not take it within this long is as good as gone for this call.
const hopDialTimeout = 5 * time.Second

// newHopTransport is the transport of the hops: keep-alive connections to
// the other replicas, HTTP/1.1 (the internal address is plain HTTP), no
// proxy from the environment.
func newHopTransport() http.RoundTripper {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: hopDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: hopDialTimeout,
	}
}

// forward sends the call r, whole, to the replica of p, which holds its
// session, and streams its answer back. The body is r's, streamed as it
// arrives, or body when the caller read it already (MCP). The request
// keeps its method, path, Host and headers, payment headers included; the
// X-Forwarded-* headers are dropped (the hop names the caller, signed).
// The owner does the payment check, the run and the settlement: this
// replica settles nothing. The whole hop is bounded by Fleet.Limit.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, p sandboxd.SessionPlace, body []byte) {
	target, err := url.Parse(p.URL)
	if err != nil || target.Host == "" {
		s.writeError(w, r, sandboxd.Errorf(sandboxd.CodeInternal, "httpapi.forward",
			"the registry holds no usable address %q for replica %s", p.URL, p.Replica))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.Fleet.Limit(p.Environment))
	defer cancel()
	if body != nil {
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	client, _ := s.clientAddr(r)
	// The holder's answer is the answer, headers and all: what this replica
	// set already (CORS, nosniff) would be sent twice, and a browser refuses
	// an Access-Control-Allow-Origin twice. They are kept for an answer of
	// this replica's own (the holder did not answer).
	own := w.Header().Clone()
	clear(w.Header())
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Set(hopHeader, signHop(s.Fleet.Secret, time.Now(), pr.Out.Method, pr.Out.URL.EscapedPath(), client,
				s.Fleet.Replica, p.Replica))
		},
		Transport: s.Fleet.transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil && ctx.Err() == nil {
				return // the caller hung up
			}
			maps.Copy(w.Header(), own)
			s.writeError(w, r, &sandboxd.Error{Code: sandboxd.CodeUnavailable, Op: "httpapi.forward", Err: err, RetryAfter: 2 * time.Second,
				Message: "the replica that holds this session (" + p.Replica + ") did not answer; retry after the time in Retry-After " +
					"(a payment sent with this call is settled or released by that replica, never twice); " +
					"if the replica is gone, the session ends once its lease runs out"})
		},
	}
	s.Log.Debug("forwarding a session call", "path", logPath(r.URL.Path), "to", p.Replica)
	proxy.ServeHTTP(w, r.WithContext(ctx))
}

// mcpSessionTools names the MCP tools that act on a session by its
// session_id argument.
var mcpSessionTools = map[string]bool{toolName: true, closeToolName: true}

// mcpLocated serves, or forwards, an MCP tools/call for a session this
// replica does not hold (place), from the body guardMCP read; it reports
// whether it answered. A session whose replica is gone is the tool's
// error, as a 404 of the HTTP route. A batch is never forwarded: its
// calls are served here.
func (s *Server) mcpLocated(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if s.Fleet == nil || spanString(body, "method") != "tools/call" {
		return false
	}
	tool := spanString(body, "params.name")
	if !mcpSessionTools[tool] {
		return false
	}
	id := spanString(body, "params.arguments.session_id")
	if id == "" {
		return false
	}
	where, p, err := s.place(r, id)
	switch {
	case err != nil:
		s.writeToolResult(w, body, s.toolError(tool, err))
		return true
	case where == forwardThere:
		s.forward(w, r, p, body)
		return true
	}
	return false
}

// writeToolResult answers the JSON-RPC request body with result, as the
// SDK would.
func (s *Server) writeToolResult(w http.ResponseWriter, body []byte, result *mcp.CallToolResult) {
	id := json.RawMessage("null")
	if start, end := jsonkeys.Span(body, "id"); start >= 0 {
		id = json.RawMessage(body[start:end])
	}
	writeJSON(w, http.StatusOK, struct {
		JSONRPC string              `json:"jsonrpc"`
		ID      json.RawMessage     `json:"id"`
		Result  *mcp.CallToolResult `json:"result"`
	}{"2.0", id, result})
}
