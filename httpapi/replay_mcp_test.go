package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
)

// TestReplayOverMCP: a retried run_python is rebuilt from the stored
// answer as the first result was (the summary, each image as an image
// block, the stored structuredContent), with the original report in
// _meta["x402/payment-response"] and _meta["sandboxd/replayed"]; nothing
// runs. A 410 is the tool error, marked replayed.
func TestReplayOverMCP(t *testing.T) {
	pic := mustImage(t, func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) })
	answer := CodeResponse{Lang: "python", Stdout: "drawn\n", Status: "ok", Environment: "python",
		Files: newFilesOut([]sandboxd.File{{Name: "a.png", Content: pic, Size: int64(len(pic)), MediaType: "image/png"}})}
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
	report, _ := res.Meta[metaPaymentResponse].(map[string]any)
	if res.Meta[metaReplayed] != true || report["transaction"] != "0xsettled" {
		t.Errorf("_meta %v", res.Meta)
	}
	if runner.ran() != 0 || gate.count(&gate.reserved) != 0 {
		t.Errorf("ran %d, reserved %d", runner.ran(), gate.reserved)
	}

	gate.r.ans, gate.r.err = nil, &sandboxd.Error{Code: sandboxd.CodeGone, Message: "not kept (10 bytes)",
		Payment: &sandboxd.PaymentDetails{Settlement: fakeSettlement()}}
	res = callTool(t, cs, map[string]any{"code": "draw()"}, paymentMeta())
	if report, _ := res.Meta[metaPaymentResponse].(map[string]any); !res.IsError || res.Meta[metaReplayed] != true ||
		report["transaction"] != "0xsettled" || !strings.Contains(text(t, res), "not kept") {
		t.Errorf("410: %+v %s", res.Meta, text(t, res))
	}
}

// TestStoredResultKinds: each kind's stored answer rebuilds its result;
// one that does not decode is an internal error.
func TestStoredResultKinds(t *testing.T) {
	for _, c := range []struct {
		kind sandboxd.AnswerKind
		body string
		says string
	}{
		{sandboxd.AnswerRun, `{"status":"ok","stdout":"hi"}`, "status ok"},
		{sandboxd.AnswerSessionCall, `{"status":"ok","result":"42","session":{"calls":2}}`, "result: 42"},
		{sandboxd.AnswerSessionOpen, `{"session_id":"ses_x","environment":"python","language":"python"}`,
			"session ses_x runs python in python"},
	} {
		res, err := storedResult(&sandboxd.StoredAnswer{Kind: c.kind, Body: []byte(c.body)})
		if err != nil || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, c.says) ||
			string(res.StructuredContent.(json.RawMessage)) != c.body {
			t.Errorf("%s: %v %+v", c.kind, err, res)
		}
	}
	for _, bad := range []*sandboxd.StoredAnswer{nil, {Kind: sandboxd.AnswerRun}, {Kind: sandboxd.AnswerRun, Body: []byte("[")},
		{Kind: "other", Body: []byte("{}")}} {
		if _, err := storedResult(bad); sandboxd.ErrorCode(err) != sandboxd.CodeInternal {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	bad := "%%%"
	if files := filesOf([]FileOut{{Name: "a", Content: &bad}}); files[0].Content != nil {
		t.Errorf("content that does not decode: %q", files[0].Content)
	}
	good := base64.StdEncoding.EncodeToString([]byte("x"))
	if files := filesOf([]FileOut{{Name: "a", Content: &good}}); string(files[0].Content) != "x" {
		t.Errorf("content %q", files[0].Content)
	}
}
