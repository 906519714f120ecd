package httpapi

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"sandboxd"
)

// The cost of the worst bodies a stranger can send unpaid, end to end
// through the handler (read, scan, decode, validate) to the answer: each
// about 12 MiB, the default body limit.
// go test -run '^$' -bench HostileShapes -benchtime 5x ./httpapi

// shapeBytes is the size each hostile body is filled to, under the limit
// with room for MCP's envelope.
const shapeBytes = 12<<20 - 1024

// fill repeats item after head, comma-separated, until the body is about
// shapeBytes, then closes it with tail.
func fill(head, item, tail string) []byte {
	var b bytes.Buffer
	b.Grow(shapeBytes + len(item) + len(tail))
	b.WriteString(head)
	for first := true; b.Len()+len(item)+len(tail)+1 < shapeBytes; first = false {
		if !first {
			b.WriteByte(',')
		}
		b.WriteString(item)
	}
	b.WriteString(tail)
	return b.Bytes()
}

// longString is a body of one string field named key filled with item.
func longString(key, item string) []byte {
	n := (shapeBytes - 64) / len(item)
	return []byte(`{"code":"print(1)",` + `"` + key + `":"` + strings.Repeat(item, n) + `"}`)
}

// hostileShapes are the bodies, by name, with the status each must get.
func hostileShapes() []struct {
	name   string
	body   []byte
	status int
} {
	deep := strings.Repeat(`{"a":`, jsonDepthLeft) + `"` + strings.Repeat("x", shapeBytes-6*jsonDepthLeft-64) + `"` + strings.Repeat("}", jsonDepthLeft)
	longKey := strings.Repeat("k", (shapeBytes-64)/17)
	var keys strings.Builder
	keys.WriteString("{")
	for i := range 16 {
		keys.WriteString(`"` + longKey + string(rune('a'+i)) + `":0,`)
	}
	keys.WriteString(`"` + strings.ToUpper(longKey) + `A":0}`)
	file := base64.StdEncoding.EncodeToString(make([]byte, 8<<20))
	return []struct {
		name   string
		body   []byte
		status int
	}{
		{"wide-numbers", fill(`{"code":"print(1)","files":[`, "0", "]}"), 413},
		{"wide-empty-objects", fill(`{"code":"print(1)","files":[`, "{}", "]}"), 413},
		{"wide-small-objects", fill(`{"code":"print(1)","files":[`, `{"a":0}`, "]}"), 400},
		{"wide-small-files", fill(`{"code":"print(1)","files":[`, `{"name":"a"}`, "]}"), 413},
		{"wide-tiny-strings", fill(`{"code":"print(1)","files":[`, `""`, "]}"), 413},
		{"wide-unclosed", fill(`{"code":"print(1)","files":[`, "0", ""), 413},
		{"wide-other-array", fill(`{"code":"print(1)","stdin":[`, "0", "]}"), 400},
		{"many-keys", fill(`{`, `"k":0`, "}"), 400},
		{"deep-at-the-limit", []byte(`{"code":"print(1)","x":` + deep + `}`), 400},
		{"long-keys-in-case", []byte(keys.String()), 400},
		{"escaped-stdin", longString("stdin", `\u0000`), 413},
		{"escaped-code", []byte(`{"code":"` + strings.Repeat(`\u0000`, (shapeBytes-64)/6) + `"}`), 413},
		{"non-ascii-code", []byte(`{"code":"` + strings.Repeat("é", (shapeBytes-64)/2) + `"}`), 413},
		{"one-8MiB-file", []byte(`{"code":"print(1)","files":[{"name":"a.bin","content":"` + file + `"}]}`), 200},
		{"16-files-of-512KiB", []byte(fullFilesBody()), 200},
	}
}

// jsonDepthLeft is how deep a body may nest within its top object and one
// field: the limit less those two levels.
const jsonDepthLeft = 30

// hostileServer is a server with the default caps over a runner that
// answers at once.
func hostileServer() *Server {
	api := newTestServer(&fakeRunner{result: sandboxd.Result{Stdout: "1\n", Status: sandboxd.StatusOK}}, &fakeGate{})
	api.MaxBodyBytes, api.MaxFiles, api.MaxFilesBytes = 12<<20, 16, 8<<20
	api.MaxCodeBytes, api.MaxStdinBytes = 65536, 65536
	return api
}

// asToolCall wraps a request body as the arguments of an MCP tools/call.
func asToolCall(body []byte) []byte {
	return append(append([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":`), body...), "}}"...)
}

// serveShape posts body to path through h and returns the answer.
func serveShape(h http.Handler, path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func BenchmarkHostileShapes(b *testing.B) {
	for _, shape := range hostileShapes() {
		for _, path := range []string{"/v1/code", "/mcp"} {
			body := shape.body
			if path == "/mcp" {
				body = asToolCall(body)
			}
			b.Run(shape.name+path, func(b *testing.B) {
				h := hostileServer().Handler()
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					serveShape(h, path, body)
				}
			})
		}
	}
}

// TestHostileShapesCostUnder3x: every hostile body, over HTTP and MCP,
// gets its answer having allocated under 3 times its size (allocations are
// deterministic; the time is BenchmarkHostileShapes'). On today's shapes
// a refusal costs the read body and little more (1.0x), a long string or a
// full 8 MiB of files about 2x.
func TestHostileShapesCostUnder3x(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates gigabytes in all")
	}
	for _, shape := range hostileShapes() {
		for _, path := range []string{"/v1/code", "/mcp"} {
			body := shape.body
			if path == "/mcp" {
				body = asToolCall(body)
			}
			h := hostileServer().Handler()
			rec := serveShape(h, path, body)
			if path == "/v1/code" && rec.Code != shape.status {
				t.Errorf("%s %s: %d %.200s, want %d", shape.name, path, rec.Code, rec.Body, shape.status)
			}
			res := testing.Benchmark(func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					serveShape(h, path, body)
				}
			})
			ratio := float64(res.AllocedBytesPerOp()) / float64(len(body))
			t.Logf("%s %s: %d, %.2fx its size in allocations, %d allocations", shape.name, path, rec.Code, ratio, res.AllocsPerOp())
			if ratio > 3 {
				t.Errorf("%s %s allocated %.2f times its size, want under 3", shape.name, path, ratio)
			}
		}
	}
}
