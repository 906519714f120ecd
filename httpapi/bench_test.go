package httpapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

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

// fullFilesBody is the largest request the default caps admit: 16 files
// of 512 KiB, 8 MiB decoded, in a body of about 11 MiB.
func fullFilesBody() string {
	content := base64.StdEncoding.EncodeToString(make([]byte, 512<<10))
	var body strings.Builder
	body.WriteString(`{"code":"print(1)","files":[`)
	for i := range 16 {
		if i > 0 {
			body.WriteString(",")
		}
		fmt.Fprintf(&body, `{"name":"data/part-%02d.csv","content":"%s"}`, i, content)
	}
	body.WriteString("]}")
	return body.String()
}

// fullFilesServer is a test server with the default caps and body limit.
func fullFilesServer() *Server {
	api := newTestServer(&fakeRunner{}, &fakeGate{})
	api.MaxBodyBytes, api.MaxFiles, api.MaxFilesBytes = 12<<20, 16, 8<<20
	return api
}

// BenchmarkParseFullFiles is the cost of reading, decoding and validating
// fullFilesBody (B/op is what a body costs while the body budget holds
// its room).
func BenchmarkParseFullFiles(b *testing.B) {
	api, payload := fullFilesServer(), fullFilesBody()
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		job, hold, err := api.parseJob(httptest.NewRecorder(), httptest.NewRequest("POST", "/v1/code", strings.NewReader(payload)))
		hold.Release()
		if err != nil || len(job.Files) != 16 {
			b.Fatalf("%v, %d files", err, len(job.Files))
		}
	}
}

// BenchmarkConcurrentFullBodies parses 16 full bodies sent at once, with
// the default body budget (4 bodies) and without one, and reports the
// most the heap in use grew (sampled every 2 ms) and how many were refused
// 429.
// go test -run '^$' -bench ConcurrentFullBodies -benchtime 3x ./httpapi
func BenchmarkConcurrentFullBodies(b *testing.B) {
	for _, budget := range []struct {
		name  string
		bytes int64
	}{{"default-budget", 0}, {"no-budget", 1 << 40}} {
		b.Run(budget.name, func(b *testing.B) {
			api, payload := fullFilesServer(), fullFilesBody()
			api.BodyBudget = budget.bytes
			var peak uint64
			refused := 0
			for b.Loop() {
				grew, busy := parseAtOnce(b, api, payload, 16)
				peak, refused = max(peak, grew), refused+busy
			}
			b.ReportMetric(float64(peak>>20), "peak-heap-MB")
			b.ReportMetric(float64(refused)/float64(b.N), "refused/op")
		})
	}
}

// parseAtOnce parses payload n times at once through parseJob and returns
// the most the heap in use grew meanwhile and how many were refused busy.
func parseAtOnce(b *testing.B, api *Server, payload string, n int) (uint64, int) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	busy := 0
	for range n {
		wg.Go(func() {
			_, hold, err := api.parseJob(httptest.NewRecorder(), httptest.NewRequest("POST", "/v1/code", strings.NewReader(payload)))
			hold.Release()
			if sandboxd.ErrorCode(err) == sandboxd.CodeBusy {
				mu.Lock()
				busy++
				mu.Unlock()
			} else if err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	return peak - base, busy
}
