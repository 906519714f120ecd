package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
)

// The cost of the API layer alone, over a runner that answers at once: a
// plain POST /v1/code against an MCP tools/call on a kept connection. The
// difference is what MCP adds to a call on the server and in a client.
// go test -run '^$' -bench . ./httpapi

func BenchmarkHTTPCall(b *testing.B) {
	ts := httptest.NewServer(newTestServer(&fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusOK}}, &fakeGate{}).Handler())
	defer ts.Close()
	for b.Loop() {
		res, err := http.Post(ts.URL+"/v1/code", "application/json", strings.NewReader(`{"code":"print(1)"}`))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
}

func BenchmarkMCPCall(b *testing.B) {
	ts := httptest.NewServer(newTestServer(&fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusOK}}, &fakeGate{}).Handler())
	defer ts.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	for b.Loop() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolName, Arguments: map[string]any{"code": "print(1)"}})
		if err != nil || res.IsError {
			b.Fatalf("%v %+v", err, res)
		}
	}
}
