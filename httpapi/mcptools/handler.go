package mcptools

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
	"sandboxd/httpapi/wire"
)

// EnvelopeBytes is what a tools/call may carry beyond the body limit:
// the JSON-RPC envelope and a payment in _meta.
const EnvelopeBytes = 32 << 10

// textPreview caps each stream quoted in the text content; the whole output
// is in structuredContent.
const textPreview = 2000

// Path is the path of the MCP endpoint.
const Path = "/mcp"

// Options are what the handler needs besides its Service.
type Options struct {
	// Log gets the tool calls' failures and retries, and the SDK's warnings.
	Log *slog.Logger
	// Version is the service's version, as the MCP handshake names it.
	Version string
	// MaxBodyBytes is the API's body limit: a message may carry that
	// much in arguments, and EnvelopeBytes besides.
	MaxBodyBytes int64
	// Fleet says the service is a replica of a fleet: a call for a
	// session is first located (Service.Locate).
	Fleet bool
}

// server is the handler's state: the Service and the Options.
type server struct {
	svc   Service
	log   *slog.Logger
	fleet bool
}

// New serves MCP over Streamable HTTP with svc's tools. It is stateless
// (no session to keep between calls, as a paid call needs none) and
// answers JSON rather than event streams. The guard reads each body first
// and refuses one too deep or batching too many messages.
func New(svc Service, opts Options) http.Handler {
	s := &server{svc: svc, log: opts.Log, fleet: opts.Fleet}
	// The SDK logs every request's session at info level: keep its warnings.
	sdkLog := slog.New(minLevel{Handler: opts.Log.Handler(), min: slog.LevelWarn}).With("sdk", "mcp")
	srv := mcp.NewServer(&mcp.Implementation{Name: "sandboxd", Version: opts.Version}, &mcp.ServerOptions{
		Logger: sdkLog,
	})
	tools := svc.Tools()
	for _, tool := range tools.Run {
		lang, _ := RunToolLanguage(tool.Name)
		srv.AddTool(tool, s.callRun(lang))
	}
	if tools.Open != nil && tools.Close != nil {
		srv.AddTool(tools.Open, s.callOpenSession)
		srv.AddTool(tools.Close, s.callCloseSession)
	}
	limit := opts.MaxBodyBytes + EnvelopeBytes
	return s.guard(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
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

// toolFailure is the answer of a tool's call that failed: a protocol
// error when the client went away (nobody reads a result), else the tool
// error.
func (s *server) toolFailure(ctx context.Context, tool string, err error) (*mcp.CallToolResult, error) {
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
func (s *server) toolError(tool string, err error) *mcp.CallToolResult {
	code := sandboxd.ErrorCode(err)
	log := s.log.With("tool", tool, "code", code)
	if code == sandboxd.CodeInternal || code == sandboxd.CodeUnavailable {
		log.Error("tool call failed", "err", err)
	} else {
		log.Debug("tool call refused", "err", err)
	}
	result := &mcp.CallToolResult{IsError: true}
	var e *sandboxd.Error
	if errors.As(err, &e) && e.Payment != nil {
		// A failed or pending settlement's report (pending: its transaction).
		if settled := s.svc.Report(e.Payment.Settlement); settled != nil {
			result.Meta = mcp.Meta{MetaPaymentResponse: settled}
		}
	}
	if terms := s.svc.Terms(tool, err); terms != nil {
		text, _ := json.Marshal(terms)
		result.Content = []mcp.Content{&mcp.TextContent{Text: string(text)}}
		result.StructuredContent = terms
		return result
	}
	msg := s.toolMessage(err)
	if _, retry := s.svc.Refusal(err); retry > 0 {
		msg += fmt.Sprintf("; retry the call in %d s", retry)
	}
	result.Content = []mcp.Content{&mcp.TextContent{Text: msg}}
	return result
}

// toolMessage is the text of a tool error that carries no terms. A
// session's refusals name the HTTP status they are (an agent that knows
// the API reads 403 at once), and point to the MCP tool rather than the
// HTTP route.
func (s *server) toolMessage(err error) string {
	msg := sandboxd.ErrorMessage(err)
	switch sandboxd.ErrorCode(err) {
	case sandboxd.CodeNotFound, sandboxd.CodeForbidden, sandboxd.CodeConflict:
		status, _ := s.svc.Refusal(err)
		msg = fmt.Sprintf("%d %s: %s", status, http.StatusText(status),
			strings.ReplaceAll(msg, "POST /v1/sessions", "open_session (POST /v1/sessions over HTTP)"))
	}
	return msg
}

// summary is the short text content of a delivered run: one line of
// outcome, then the output, each stream cut at textPreview bytes.
func summary(r wire.CodeResponse) string {
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
