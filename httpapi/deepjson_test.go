package httpapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/x402"
)

// decodingGate is the fake gate behind the real payment decoder: it
// decodes the payment header as the service's gate does, then authorizes.
type decodingGate struct{ fakeGate }

// Check decodes req's payment header with x402's strict decoder; a header
// that does not decode is CodeInvalid, as the gate classifies it.
func (g *decodingGate) Check(ctx context.Context, req sandboxd.PaymentRequest) (sandboxd.Authorization, error) {
	if _, err := x402.DecodePayment(req.Signature, req.XPayment); err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeInvalid, "httpapi.test", err, err.Error())
	}
	return g.fakeGate.Check(ctx, req)
}

// deepRequest is one attack: a request carrying JSON nested deep.
type deepRequest struct {
	name   string
	path   string
	body   string
	header string // a PAYMENT-SIGNATURE value, or ""
	status int
	want   string
}

// nest is depth levels of arrays around 1, closed or not.
func nest(depth int, closed bool) string {
	s := strings.Repeat("[", depth) + "1"
	if closed {
		s += strings.Repeat("]", depth)
	}
	return s
}

// mcpCall is a tools/call of run_python with the arguments and _meta JSON.
func mcpCall(args, meta string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":` + args +
		`,"_meta":` + meta + `}}`
}

// deepHeader is a PAYMENT-SIGNATURE value whose JSON nests depth levels.
func deepHeader(depth int, closed bool) string {
	return base64.StdEncoding.EncodeToString([]byte(`{"x402Version":2,"payload":` + nest(depth, closed) + `}`))
}

// deepRequests are the attacks: 100,000 levels, closed and not, in each
// JSON the service reads, and, where the input's size cap (16 KB for a
// payment header) or the MCP SDK's decoder (1,000 levels) stops a document
// so deep, the deepest one that gets past them.
func deepRequests() []deepRequest {
	code := `{"code":"print(1)"}`
	var reqs []deepRequest
	for _, closed := range []bool{true, false} {
		c := fmt.Sprintf("closed=%v", closed)
		// The deepest payment under the header's 16 KB: 12,000 levels
		// unclosed, 6,000 closed.
		header := 6000
		if !closed {
			header = 12_000
		}
		reqs = append(reqs,
			deepRequest{"body 100000 " + c, "/v1/code", `{"code":` + nest(100_000, closed) + `}`, "", 400, "nesting is too deep"},
			deepRequest{"header 100000 " + c, "/v1/code", code, deepHeader(100_000, closed), 400, "over the limit"},
			deepRequest{fmt.Sprintf("header %d %s", header, c), "/v1/code", code, deepHeader(header, closed), 400, "nesting is too deep"},
			deepRequest{"mcp arguments 100000 " + c, "/mcp", mcpCall(`{"code":`+nest(100_000, closed)+`}`, `{}`), "", 400, "nesting is too deep"},
			deepRequest{"mcp arguments 990 " + c, "/mcp", mcpCall(`{"code":`+nest(990, closed)+`}`, `{}`), "", 400, "nesting is too deep"},
			deepRequest{"mcp _meta 100000 " + c, "/mcp", mcpCall(code, `{"x402/payment":{"x402Version":2,"payload":`+nest(100_000, closed)+`}}`), "", 400, "nesting is too deep"},
			deepRequest{"mcp _meta 990 " + c, "/mcp", mcpCall(code, `{"x402/payment":{"x402Version":2,"payload":`+nest(990, closed)+`}}`), "", 400, "nesting is too deep"},
			deepRequest{"mcp batch 100000 " + c, "/mcp", "[" + mcpCall(code, nest(100_000, closed)) + "]", "", 400, "nesting is too deep"},
		)
	}
	return reqs
}

// allocated runs f and returns the bytes the process allocated meanwhile.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// serve sends one attack to h and returns the answer.
func (d deepRequest) serve(h http.Handler) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, d.path, strings.NewReader(d.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if d.header != "" {
		req.Header.Set(x402.HeaderPaymentSignature, d.header)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestDeepJSONIsRefusedCheaply sends JSON nested 100,000 deep (and the
// deepest that fits where a size cap or the SDK refuses that) in the body
// of POST /v1/code, its payment header, and an MCP call's arguments, _meta
// and batch, to the real handler with the production body limit and the
// real payment decoder. Each is answered 400, saying the nesting is too deep
// and the limit, within 50 ms, having allocated under 5 MB, and nothing
// ran or was charged. Before the depth cap, the recursive key check kept a
// formatted path alive at every level: hundreds of megabytes and seconds.
func TestDeepJSONIsRefusedCheaply(t *testing.T) {
	runner := &fakeRunner{result: sandboxd.Result{Stdout: "1\n", Status: sandboxd.StatusOK}}
	gate := &decodingGate{}
	api := newTestServer(runner, &gate.fakeGate)
	api.Gate = gate
	api.MaxBodyBytes, api.MaxCodeBytes = 262144, 65536 // the defaults of config.yaml
	h := api.Handler()
	// A warm-up call of each kind, so what the first call builds once is
	// not counted.
	deepRequest{path: "/v1/code", body: `{"code":"print(1)"}`}.serve(h)
	deepRequest{path: "/mcp", body: mcpCall(`{"code":"print(1)"}`, `{}`)}.serve(h)
	ran, reserved := runner.ran(), gate.count(&gate.reserved)
	for _, d := range deepRequests() {
		t.Run(d.name, func(t *testing.T) {
			var rec *httptest.ResponseRecorder
			took := time.Duration(1<<63 - 1)
			for range 3 { // the fastest of three: a busy host's scheduler is not the service's cost
				start := time.Now()
				rec = d.serve(h)
				took = min(took, time.Since(start))
			}
			bytes := allocated(func() { d.serve(h) })
			allocs := testing.AllocsPerRun(1, func() { d.serve(h) })
			t.Logf("%s: %v, %d bytes in %.0f allocations", d.name, took, bytes, allocs)
			if rec.Code != d.status || !strings.Contains(rec.Body.String(), d.want) {
				t.Errorf("answer %d %.300s, want %d with %q", rec.Code, rec.Body.String(), d.status, d.want)
			}
			if d.want == "nesting is too deep" && !strings.Contains(rec.Body.String(), "limit is 32 levels") {
				t.Errorf("answer %.300s does not name the limit", rec.Body.String())
			}
			if took > 50*time.Millisecond {
				t.Errorf("answered in %v, want under 50ms", took)
			}
			if bytes > 5<<20 {
				t.Errorf("allocated %d bytes, want under 5 MB", bytes)
			}
		})
	}
	if runner.ran() != ran || gate.count(&gate.reserved) != reserved {
		t.Fatalf("a deep request ran (%d) or reserved (%d)", runner.ran()-ran, gate.count(&gate.reserved)-reserved)
	}
}
