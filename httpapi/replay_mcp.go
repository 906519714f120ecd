package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
	"sandboxd/httpapi/ingress"
)

// metaReplayed is the _meta key that marks a tool result read back from
// the stored answers, as Idempotent-Replayed does over HTTP.
const metaReplayed = "sandboxd/replayed"

// replayResult answers the retry r of a paid tool's call: it waits for the
// stored answer (Replay.Answer) and rebuilds the tool result the first
// call had, by the same functions (its structuredContent the stored bytes,
// the text and image blocks made from them), with the original settlement
// report in _meta["x402/payment-response"] and _meta["sandboxd/replayed"].
// The stored answer's refusals are tool errors as toolError makes them
// (202 and 410 marked replayed too; a pending opening names its session);
// a client gone is a protocol error.
func (s *Server) replayResult(ctx context.Context, tool string, r sandboxd.Replay) (*mcp.CallToolResult, error) {
	ingress.Release(ctx)
	ans, err := r.Answer(ctx)
	var result *mcp.CallToolResult
	if err == nil {
		result, err = storedResult(ans)
	}
	s.Log.Info("paid tool call retried", "tool", tool, "by", r.By(), "payer", r.Payer(),
		"code", retryCode(err), "answered", err == nil)
	if err == nil {
		return markReplayed(paidResult(result, ans.Settlement)), nil
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil, err
	}
	result = s.toolError(tool, err)
	if code := sandboxd.ErrorCode(err); code == sandboxd.CodePending || code == sandboxd.CodeGone {
		markReplayed(result)
	}
	if open := pendingOpen(ans, err); open != nil {
		result.Content = append(result.Content, pendingOpenText(open.SessionID))
	}
	return result, nil
}

// storedResult rebuilds the tool result of the stored answer ans (its
// structuredContent), by its kind; CodeInternal when it does not decode.
func storedResult(ans *sandboxd.StoredAnswer) (*mcp.CallToolResult, error) {
	if ans == nil || ans.Body == nil {
		return nil, sandboxd.Errorf(sandboxd.CodeInternal, "httpapi.replay", "a stored answer without its bytes")
	}
	var content []mcp.Content
	var err error
	switch ans.Kind {
	case sandboxd.AnswerRun:
		var out CodeResponse
		if err = json.Unmarshal(ans.Body, &out); err == nil {
			content = append([]mcp.Content{&mcp.TextContent{Text: summary(out)}}, imageBlocks(filesOf(out.Files))...)
		}
	case sandboxd.AnswerSessionCall:
		var out SessionCodeResponse
		if err = json.Unmarshal(ans.Body, &out); err == nil {
			content = append([]mcp.Content{&mcp.TextContent{Text: sessionSummary(out)}}, imageBlocks(filesOf(out.Files))...)
		}
	case sandboxd.AnswerSessionOpen:
		var open SessionResponse
		if err = json.Unmarshal(ans.Body, &open); err == nil {
			content = []mcp.Content{openText(open)}
		}
	default:
		err = errors.New("unknown kind " + string(ans.Kind))
	}
	if err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeInternal, "httpapi.replay", err, "")
	}
	return &mcp.CallToolResult{Content: content, StructuredContent: json.RawMessage(ans.Body)}, nil
}

// filesOf is the files out of an answer as the runner gave them: what
// imageBlocks reads (a content that does not decode is left out).
func filesOf(out []FileOut) []sandboxd.File {
	files := make([]sandboxd.File, 0, len(out))
	for _, f := range out {
		file := sandboxd.File{Name: f.Name, Size: f.Size, MediaType: f.MediaType}
		if f.Content != nil {
			if content, err := base64.StdEncoding.DecodeString(*f.Content); err == nil {
				file.Content = content
			}
		}
		files = append(files, file)
	}
	return files
}

// markReplayed marks result as read back from the stored answers.
func markReplayed(result *mcp.CallToolResult) *mcp.CallToolResult {
	if result.Meta == nil {
		result.Meta = mcp.Meta{}
	}
	result.Meta[metaReplayed] = true
	return result
}
