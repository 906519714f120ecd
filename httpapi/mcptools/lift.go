package mcptools

import (
	"context"
	"encoding/json"

	"sandboxd"
	"sandboxd/internal/jsonkeys"
)

// liftArguments takes the arguments of a run tool's tools/call out of the
// MCP message body, before the SDK reads it: the SDK decodes a message
// several times over (about 30 times its size in allocations for a long
// string), so it gets the message with "arguments":{} in their place, and
// the tool reads the arguments lifted out (toolArgs), decoded once as an
// HTTP body is. What is left, the envelope, is at most EnvelopeBytes:
// an id, _meta or any other message the SDK reads whole is small. args is
// nil when the body is no such call.
func liftArguments(body []byte) (envelope, args []byte, err error) {
	envelope = body
	if start, end := jsonkeys.Span(body, "params.arguments"); start >= 0 {
		// The method and the name are read from the envelope, which is
		// small, rather than from the body again.
		lifted := make([]byte, 0, len(body)-(end-start)+2)
		lifted = append(append(append(lifted, body[:start]...), "{}"...), body[end:]...)
		if len(lifted) <= EnvelopeBytes && spanString(lifted, "method") == "tools/call" && isRunTool(spanString(lifted, "params.name")) {
			envelope, args = lifted, body[start:end]
		}
	}
	if len(envelope) > EnvelopeBytes {
		return nil, nil, sandboxd.Errorf(sandboxd.CodeTooLarge, "httpapi.mcp",
			"MCP request refused: the message is %d bytes beyond a run tool call's arguments, over the limit of %d bytes",
			len(envelope), EnvelopeBytes)
	}
	return envelope, args, nil
}

// spanString is the string at path in the JSON document raw, or "" when
// there is none there. It decodes at most EnvelopeBytes: a longer one
// is no method or tool name.
func spanString(raw []byte, path string) string {
	start, end := jsonkeys.Span(raw, path)
	if start < 0 || end-start > EnvelopeBytes || raw[start] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(raw[start:end], &s) != nil {
		return ""
	}
	return s
}

// toolArgsKey is the context key of a tools/call's lifted arguments.
type toolArgsKey struct{}

// withToolArgs returns ctx carrying a call's lifted arguments.
func withToolArgs(ctx context.Context, args []byte) context.Context {
	if args == nil {
		return ctx
	}
	return context.WithValue(ctx, toolArgsKey{}, args)
}

// toolArgs returns the arguments lifted out of the call being served, or
// sent when none were lifted.
func toolArgs(ctx context.Context, sent json.RawMessage) json.RawMessage {
	if args, ok := ctx.Value(toolArgsKey{}).([]byte); ok {
		return args
	}
	return sent
}
