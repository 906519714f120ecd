package httpapi

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
	"sandboxd/httpapi/mcptools"
	"sandboxd/httpapi/wire"
)

// TestReplayOverMCP: a retried run_python is rebuilt from the stored
// answer as the first result was (the summary, each image as an image
// block, the stored structuredContent), with the original report in
// _meta["x402/payment-response"] and _meta["sandboxd/replayed"]; nothing
// runs. A 410 is the tool error, marked replayed.
func TestReplayOverMCP(t *testing.T) {
	pic := mustImage(t, func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) })
	answer := wire.CodeResponse{Lang: "python", Stdout: "drawn\n", Status: "ok", Environment: "python",
		Files: wire.NewFilesOut([]sandboxd.File{{Name: "a.png", Content: pic, Size: int64(len(pic)), MediaType: "image/png"}})}
	body, _ := json.Marshal(answer)
	stored := &sandboxd.StoredAnswer{Kind: sandboxd.AnswerRun, Status: 200, Body: body, Settlement: fakeSettlement()}
	runner := &fakeRunner{}
	gate := &replayGate{fakeGate: &fakeGate{}, r: &fakeReplay{by: sandboxd.ReplayByID, ans: stored}, how: replayInCheckError}
	srv := newTestServer(runner, gate.fakeGate)
	srv.Gate, srv.MaxFiles, srv.MaxFilesBytes = gate, 4, 1<<20
	cs := mustMCP(t, srv)
	res := callTool(t, cs, map[string]any{"code": "draw()"}, paymentMeta())
	if res.IsError || !strings.HasPrefix(text(t, res), "status ok") || !strings.Contains(text(t, res), "drawn") {
		t.Fatalf("%v %s", res.IsError, text(t, res))
	}
	var want map[string]any
	_ = json.Unmarshal(body, &want)
	if !sameJSON(structured(t, res), want) {
		t.Errorf("structuredContent %v, want the stored %s", res.StructuredContent, body)
	}
	if img, _ := res.Content[len(res.Content)-1].(*mcp.ImageContent); len(res.Content) != 2 || img == nil ||
		!bytes.Equal(img.Data, pic) || img.MIMEType != "image/png" {
		t.Errorf("content %+v", res.Content)
	}
	report, _ := res.Meta[mcptools.MetaPaymentResponse].(map[string]any)
	if res.Meta[mcptools.MetaReplayed] != true || report["transaction"] != "0xsettled" {
		t.Errorf("_meta %v", res.Meta)
	}
	if runner.ran() != 0 || gate.count(&gate.reserved) != 0 {
		t.Errorf("ran %d, reserved %d", runner.ran(), gate.reserved)
	}

	gate.r.ans, gate.r.err = nil, &sandboxd.Error{Code: sandboxd.CodeGone, Message: "not kept (10 bytes)",
		Payment: &sandboxd.PaymentDetails{Settlement: fakeSettlement()}}
	res = callTool(t, cs, map[string]any{"code": "draw()"}, paymentMeta())
	if report, _ := res.Meta[mcptools.MetaPaymentResponse].(map[string]any); !res.IsError || res.Meta[mcptools.MetaReplayed] != true ||
		report["transaction"] != "0xsettled" || !strings.Contains(text(t, res), "not kept") {
		t.Errorf("410: %+v %s", res.Meta, text(t, res))
	}
}
