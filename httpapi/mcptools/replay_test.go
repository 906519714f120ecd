package mcptools

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
)

// reportless is a Service whose settlements have no report; its other
// methods are not called by the tests that use it.
type reportless struct{ Service }

// Report returns nil: no settlement is reported.
func (reportless) Report(*sandboxd.Settlement) map[string]any { return nil }

// TestStoredResultKinds: each kind's stored answer rebuilds its result;
// one that does not decode is an internal error.
func TestStoredResultKinds(t *testing.T) {
	s := &server{svc: reportless{}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
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
		d, err := storedDelivery(&sandboxd.StoredAnswer{Kind: c.kind, Body: []byte(c.body)})
		if err != nil {
			t.Errorf("%s: %v", c.kind, err)
			continue
		}
		res := s.delivered(d)
		if !strings.Contains(res.Content[0].(*mcp.TextContent).Text, c.says) ||
			string(res.StructuredContent.(json.RawMessage)) != c.body {
			t.Errorf("%s: %+v", c.kind, res)
		}
	}
	for _, bad := range []*sandboxd.StoredAnswer{nil, {Kind: sandboxd.AnswerRun}, {Kind: sandboxd.AnswerRun, Body: []byte("[")},
		{Kind: "other", Body: []byte("{}")}} {
		if _, err := storedDelivery(bad); sandboxd.ErrorCode(err) != sandboxd.CodeInternal {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
