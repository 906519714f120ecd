package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
)

// mcpEnvelopeBytes is what a tools/call may carry beyond the body limit:
// the JSON-RPC envelope and a payment in _meta.
const mcpEnvelopeBytes = 32 << 10

// textPreview caps each stream quoted in the text content; the whole output
// is in structuredContent.
const textPreview = 2000

// toolInput is the arguments of a run tool (run_python, …) when sessions
// are off (sessionToolInput's otherwise).
type toolInput struct {
	Code        *string       `json:"code"`
	Stdin       *string       `json:"stdin"`
	Environment *string       `json:"environment"`
	Files       []fileRequest `json:"files"`
}

// mcpHandler serves MCP over Streamable HTTP with a run tool per language
// (run_python, …: addRunTools) and, when sessions are on, open_session and
// close_session. It is stateless (no session to keep between calls, as a paid call needs
// none) and answers JSON rather than event streams. guardMCP reads each
// body first and refuses one too deep or batching too many messages.
func (s *Server) mcpHandler() http.Handler {
	// The SDK logs every request's session at info level: keep its warnings.
	sdkLog := slog.New(minLevel{Handler: s.Log.Handler(), min: slog.LevelWarn}).With("sdk", "mcp")
	srv := mcp.NewServer(&mcp.Implementation{Name: "sandboxd", Version: s.Version.Version}, &mcp.ServerOptions{
		Logger: sdkLog,
	})
	s.addRunTools(srv)
	if s.Sessions != nil {
		srv.AddTool(s.openSessionTool(), s.callOpenSession)
		srv.AddTool(s.closeSessionTool(), s.callCloseSession)
	}
	limit := s.MaxBodyBytes + mcpEnvelopeBytes
	return s.guardMCP(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		Logger:              sdkLog,
		MaxRequestBodyBytes: limit,
		// The protection refuses a localhost connection whose Host is not
		// localhost: every deployment behind a reverse proxy. It guards
		// local servers holding a user's authority; this one has none to
		// steal (a paid call carries its own signed payment).
		DisableLocalhostProtection: true,
	}), limit)
}

// decodeToolArgs decodes a run tool's arguments as strictly as an HTTP body,
// into the request they make and the session they name (nil for none;
// always nil when sessions are off, where session_id is an unknown field).
func (s *Server) decodeToolArgs(args json.RawMessage) (codeRequest, *string, error) {
	if err := argsWithin(args, s.MaxBodyBytes); err != nil {
		return codeRequest{}, nil, err
	}
	if s.Sessions == nil {
		var in toolInput
		err := decodeObject(args, s.requestLimits(toolShape), &in)
		return codeRequest{Code: in.Code, Stdin: in.Stdin, Environment: in.Environment, Files: in.Files}, nil, err
	}
	var in sessionToolInput
	err := decodeObject(args, s.requestLimits(sessionToolShape), &in)
	return codeRequest{Code: in.Code, Stdin: in.Stdin, Environment: in.Environment, Files: in.Files}, in.SessionID, err
}

// argsWithin refuses a tool's arguments over limit bytes.
func argsWithin(args json.RawMessage, limit int64) error {
	if int64(len(args)) > limit {
		return sandboxd.Errorf(sandboxd.CodeTooLarge, "httpapi.mcp", "the arguments are over the limit of %d bytes", limit)
	}
	return nil
}

// toolPayment is the payment request of a paid tool's call: the tool's
// resource and declared extensions, and the PaymentPayload of
// _meta["x402/payment"], if any, as the gate reads it over HTTP.
func toolPayment(req *mcp.CallToolRequest, resource string, declared map[string]any) (sandboxd.PaymentRequest, error) {
	pay := sandboxd.PaymentRequest{ResourceURL: resource, Extensions: declared, Transport: sandboxd.TransportMCP}
	if payload, ok := req.Params.Meta[metaPayment]; ok {
		var err error
		if pay.Signature, err = paymentSignature(payload); err != nil {
			return pay, err
		}
	}
	return pay, nil
}

// toolFailure is the answer of a paid tool's flow that failed: a protocol
// error when the client went away (nobody reads a result), else the tool
// error.
func (s *Server) toolFailure(ctx context.Context, tool string, err error) (*mcp.CallToolResult, error) {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil, err
	}
	return s.toolError(tool, err), nil
}

// toolError is the tool result of a refused or failed call. A payment
// error carries the x402 terms as structuredContent and, JSON-encoded, as
// the text (x402's MCP transport), with a failed settlement's report in
// _meta; a busy one says when to retry; an internal one is logged and not
// detailed; a session's refusal names its HTTP status (toolMessage).
func (s *Server) toolError(tool string, err error) *mcp.CallToolResult {
	code := sandboxd.ErrorCode(err)
	log := s.Log.With("tool", tool, "code", code)
	if code == sandboxd.CodeInternal || code == sandboxd.CodeUnavailable {
		log.Error("tool call failed", "err", err)
	} else {
		log.Debug("tool call refused", "err", err)
	}
	result := &mcp.CallToolResult{IsError: true}
	var e *sandboxd.Error
	if errors.As(err, &e) && e.Payment != nil {
		// A failed or pending settlement's report (pending: its transaction).
		if settled := settlementMeta(e.Payment.Settlement); settled != nil {
			result.Meta = mcp.Meta{metaPaymentResponse: settled}
		}
	}
	if terms := paymentTerms(err); terms != nil {
		addExtensions(terms, s.declaredExtensions(tool))
		text, _ := json.Marshal(terms)
		result.Content = []mcp.Content{&mcp.TextContent{Text: string(text)}}
		result.StructuredContent = terms
		return result
	}
	msg := toolMessage(err)
	if e != nil && e.RetryAfter > 0 {
		msg += fmt.Sprintf("; retry the call in %d s", retrySeconds(e.RetryAfter))
	}
	result.Content = []mcp.Content{&mcp.TextContent{Text: msg}}
	return result
}

// summary is the short text content of a delivered run: one line of
// outcome, then the output, each stream cut at textPreview bytes.
func summary(r CodeResponse) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status %s, exit code %d, %d ms", r.Status, r.ExitCode, r.DurationMS)
	if r.CPUMS != nil && r.MaxRSSKB != nil {
		fmt.Fprintf(&b, ", cpu %d ms, max rss %d KiB", *r.CPUMS, *r.MaxRSSKB)
	}
	for _, stream := range []struct{ name, text string }{{"stdout", r.Stdout}, {"stderr", r.Stderr}} {
		if stream.text == "" {
			continue
		}
		fmt.Fprintf(&b, "\n%s:\n%s", stream.name, preview(stream.text))
	}
	for _, f := range r.Files {
		fmt.Fprintf(&b, "\nfile %q: %d bytes, %s", f.Name, f.Size, f.MediaType)
		if f.Content == nil {
			b.WriteString(", content left out (over the caps)")
		}
	}
	return b.String()
}

// imageMediaTypes are the media types of files out that are also
// returned as MCP image content.
var imageMediaTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// imageBlocks are the image files out with their content, as MCP image
// content, in the files' order.
func imageBlocks(files []sandboxd.File) []mcp.Content {
	var blocks []mcp.Content
	for _, f := range files {
		mt, _, _ := strings.Cut(f.MediaType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
		if f.Content != nil && imageMediaTypes[mt] {
			blocks = append(blocks, &mcp.ImageContent{Data: f.Content, MIMEType: mt})
		}
	}
	return blocks
}

// preview cuts s at textPreview bytes, on a rune boundary, saying so.
func preview(s string) string {
	if len(s) <= textPreview {
		return s
	}
	cut := textPreview
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[... %d more bytes in structuredContent]", len(s)-cut)
}

// minLevel is a log handler that drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

// Enabled reports whether level is at least min and the handler takes it.
func (h minLevel) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= h.min && h.Handler.Enabled(ctx, level)
}

// WithAttrs keeps the minimum level on the narrowed handler.
func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

// WithGroup keeps the minimum level on the narrowed handler.
func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}

// mcpPath is the path of the MCP endpoint.
const mcpPath = "/mcp"
