package httpapi

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/httpapi/mcptools"
)

// ping is a JSON-RPC ping with the given id (JSON).
func ping(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` }

// batch is a JSON-RPC batch of n pings.
func batch(n int) string {
	msgs := make([]string, n)
	for i := range msgs {
		msgs[i] = ping(fmt.Sprint(i + 1))
	}
	return "[" + strings.Join(msgs, ",") + "]"
}

// TestMCPEnvelopeAttacks sends the MCP endpoint the largest and most
// malformed JSON-RPC envelopes under the body limit: batches of up to 6,000
// messages, a 200 KB id, a number id no integer holds, an id of the wrong
// type, a params object of 20,000 keys, a _meta array of 20,000 items. Each is answered within 50 ms,
// having allocated under 5 MB (500 ms and 10 MB for what the SDK accepts
// and decodes, linear in the body); a batch of more than mcptools.MaxBatch messages is
// refused whole with a JSON-RPC error that says the limit.
func TestMCPEnvelopeAttacks(t *testing.T) {
	runner := &fakeRunner{result: sandboxd.Result{Stdout: "1\n", Status: sandboxd.StatusOK}}
	api := newTestServer(runner, &fakeGate{})
	api.MaxBodyBytes, api.MaxCodeBytes = 262144, 65536
	h := api.Handler()
	deepRequest{path: "/mcp", body: ping("1")}.serve(h)
	keys := make([]string, 20_000)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"k%d":0`, i)
	}
	cases := []struct {
		name, body string
		status     int
		want       string
		budget     uint64        // bytes the answer may allocate
		within     time.Duration // how soon it must come
	}{
		{"batch of 16", batch(mcptools.MaxBatch), 200, `"id":16`, 5 << 20, 50 * time.Millisecond},
		{"batch of 17", batch(mcptools.MaxBatch + 1), 400, "at most 16 messages", 5 << 20, 50 * time.Millisecond},
		{"batch of 6000", batch(6000), 400, "at most 16 messages", 5 << 20, 50 * time.Millisecond},
		// The SDK decodes a message several times over: all but a
		// run_python call's arguments must fit in mcptools.EnvelopeBytes.
		{"200 KB string id", ping(`"` + strings.Repeat("i", 200_000) + `"`), 413, "over the limit of 32768 bytes", 5 << 20, 50 * time.Millisecond},
		{"30 KB string id", ping(`"` + strings.Repeat("i", 30_000) + `"`), 200, `"result"`, 5 << 20, 100 * time.Millisecond},
		{"200 KB _meta beside the arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(1)"},"_meta":{"a":"` + strings.Repeat("m", 200_000) + `"}}}`, 413, "over the limit of 32768 bytes", 5 << 20, 50 * time.Millisecond},
		{"200 KB arguments of another tool", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"other","arguments":{"code":"` + strings.Repeat("m", 200_000) + `"}}}`, 413, "over the limit of 32768 bytes", 5 << 20, 50 * time.Millisecond},
		// A wide object or array anywhere in the envelope is refused by
		// the scan, before the SDK builds a map of it.
		{"params of 20000 keys", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{` + strings.Join(keys, ",") + `}}`, 400, `"params\" holds more than 64 keys`, 5 << 20, 50 * time.Millisecond},
		{"_meta array of 20000 items", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"a":[` + strings.Repeat("0,", 20_000) + `0]}}}`, 400, `"params._meta.a\" holds more than 64 items`, 5 << 20, 50 * time.Millisecond},
		{"number id over any integer", ping("1e999999"), 400, "", 5 << 20, 50 * time.Millisecond},
		{"object id", ping(`{"a":1}`), 400, "", 5 << 20, 50 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := deepRequest{path: "/mcp", body: c.body}
			took := time.Duration(1<<63 - 1)
			var status int
			var body string
			for range 3 { // the fastest of three: a busy host's scheduler is not the service's cost
				start := time.Now()
				rec := d.serve(h)
				took = min(took, time.Since(start))
				status, body = rec.Code, rec.Body.String()
			}
			bytes := allocated(func() { d.serve(h) })
			t.Logf("%s: %d in %v, %d bytes: %.120s", c.name, status, took, bytes, body)
			if status != c.status || !strings.Contains(body, c.want) {
				t.Errorf("answer %d %.300s, want %d with %q", status, body, c.status, c.want)
			}
			if took > c.within {
				t.Errorf("answered in %v, want under %v", took, c.within)
			}
			if bytes > c.budget {
				t.Errorf("allocated %d bytes, want under %d", bytes, c.budget)
			}
		})
	}
}
