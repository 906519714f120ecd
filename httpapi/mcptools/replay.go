package mcptools

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
	"sandboxd/httpapi/wire"
)

// MetaReplayed is the _meta key that marks a tool result read back from
// the stored answers, as Idempotent-Replayed does over HTTP.
const MetaReplayed = "sandboxd/replayed"

// replayResult answers the retry d of a paid tool's call, err being what
// waiting for its stored answer (Replay.Answer) gave: it rebuilds the tool
// result the first call had, by the same functions (its structuredContent
// the stored bytes, the text and image blocks made from them), with the
// original settlement report in _meta["x402/payment-response"] and
// _meta["sandboxd/replayed"]. The stored answer's refusals are tool errors
// as toolError makes them (202 and 410 marked replayed too; a pending
// opening names its session); a client gone is a protocol error.
func (s *server) replayResult(ctx context.Context, tool string, d Delivery, err error) (*mcp.CallToolResult, error) {
	var stored Delivery
	if err == nil {
		stored, err = storedDelivery(d.Stored)
	}
	var code sandboxd.Code
	if err != nil {
		code = sandboxd.ErrorCode(err)
	}
	s.log.Info("paid tool call retried", "tool", tool, "by", d.Replay.By(), "payer", d.Replay.Payer(),
		"code", code, "answered", err == nil)
	if err == nil {
		return markReplayed(s.delivered(stored)), nil
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil, err
	}
	result := s.toolError(tool, err)
	if code == sandboxd.CodePending || code == sandboxd.CodeGone {
		markReplayed(result)
	}
	if open := wire.PendingOpen(d.Stored, err); open != nil {
		result.Content = append(result.Content, pendingOpenText(open.SessionID))
	}
	return result, nil
}

// storedDelivery is the stored answer ans as the Delivery it was, decoded
// by its kind; CodeInternal when it does not decode.
func storedDelivery(ans *sandboxd.StoredAnswer) (Delivery, error) {
	if ans == nil || ans.Body == nil {
		return Delivery{}, sandboxd.Errorf(sandboxd.CodeInternal, "httpapi.replay", "a stored answer without its bytes")
	}
	d := Delivery{Body: ans.Body, Settlement: ans.Settlement}
	var err error
	switch ans.Kind {
	case sandboxd.AnswerRun:
		d.Run = new(wire.CodeResponse)
		if err = json.Unmarshal(ans.Body, d.Run); err == nil {
			d.Files = wire.FilesOf(d.Run.Files)
		}
	case sandboxd.AnswerSessionCall:
		d.Call = new(wire.SessionCodeResponse)
		if err = json.Unmarshal(ans.Body, d.Call); err == nil {
			d.Files = wire.FilesOf(d.Call.Files)
		}
	case sandboxd.AnswerSessionOpen:
		d.Open = new(wire.SessionResponse)
		err = json.Unmarshal(ans.Body, d.Open)
	default:
		err = errors.New("unknown kind " + string(ans.Kind))
	}
	if err != nil {
		return Delivery{}, sandboxd.Wrap(sandboxd.CodeInternal, "httpapi.replay", err, "")
	}
	return d, nil
}

// markReplayed marks result as read back from the stored answers.
func markReplayed(result *mcp.CallToolResult) *mcp.CallToolResult {
	if result.Meta == nil {
		result.Meta = mcp.Meta{}
	}
	result.Meta[MetaReplayed] = true
	return result
}
