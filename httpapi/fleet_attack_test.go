package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sandboxd/httpapi/fleethop"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sandboxd"
)

// hopRecorder is a hop transport that remembers the hop headers it sent.
type hopRecorder struct {
	mu   sync.Mutex
	hops []string
}

func (h *hopRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.hops = append(h.hops, r.Header.Get(fleethop.Header))
	h.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// TestFleetHopForAnotherReplicaIsRefused: a hop replica a signed for
// replica b, copied off the wire and sent to replica c (which never took
// it), is a 403 at c and runs nothing: the hop names its destination
// under its MAC.
func TestFleetHopForAnotherReplicaIsRefused(t *testing.T) {
	reg := &fakeRegistry{places: map[string]sandboxd.SessionPlace{}}
	a, b, c := newFleetReplica(t, reg, "a"), newFleetReplica(t, reg, "b"), newFleetReplica(t, reg, "c")
	rec := &hopRecorder{}
	a.srv.Fleet.Transport = rec
	path := openCodePath(t, b)
	if status, _, body := sendPaid(t, "POST", a.ts.URL+path, `{"code":"1"}`, nil); status != http.StatusOK {
		t.Fatalf("a call through a for b's session: %d %s", status, body)
	}
	if len(rec.hops) != 1 || rec.hops[0] == "" {
		t.Fatalf("a sent hops %q, want one", rec.hops)
	}
	status, _, body := sendPaid(t, "POST", c.ts.URL+path, `{"code":"1"}`, http.Header{fleethop.Header: {rec.hops[0]}})
	if status != http.StatusForbidden || !strings.Contains(body, fleethop.Header) {
		t.Errorf("b's hop replayed to c: %d %s; want 403", status, body)
	}
	if _, _, runs := c.engine.counts(); runs != 0 {
		t.Errorf("c ran %d calls", runs)
	}
}

// countingServer is an outside host: it counts the requests that reach it.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(ts.Close)
	return ts, &n
}

// TestFleetForwardsOnlyToReplicaAddresses: whoever can write the registry
// cannot send a session's calls, payment headers and all, anywhere but to
// a replica's address: a URL that breaks server.advertise_url's rule is a
// 500 to the caller, nothing forwarded, over HTTP and MCP.
func TestFleetForwardsOnlyToReplicaAddresses(t *testing.T) {
	reg := &fakeRegistry{places: map[string]sandboxd.SessionPlace{}}
	b := newFleetReplica(t, reg, "b")
	outside, reached := countingServer(t)
	hostPort := strings.TrimPrefix(outside.URL, "http://")
	_, port, _ := net.SplitHostPort(hostPort)
	bad := map[string]string{
		"a name":        "http://localhost:" + port,
		"https, a name": "https://outside.example",
		"userinfo":      "http://user:pw@" + hostPort,
		"a path":        outside.URL + "/collect",
		"a query":       outside.URL + "?to=there",
		"a fragment":    outside.URL + "#x",
		"ftp":           "ftp://" + hostPort,
		"opaque":        "http:" + hostPort,
		"no host":       "http://:" + port,
		"not trusted":   "http://127.0.0.2:" + port,
	}
	i := 0
	for name, raw := range bad {
		i++
		id := fmt.Sprintf("ses_%032x", 0xbad0+i)
		reg.places[sandboxd.SessionHash(id)] = sandboxd.SessionPlace{Replica: "holder", URL: raw, Environment: "python"}
		status, _, body := sendPaid(t, "POST", b.ts.URL+"/v1/sessions/"+id+"/code", `{"code":"1"}`,
			http.Header{"Payment-Signature": {"signed-by-the-payer"}})
		if status != http.StatusInternalServerError {
			t.Errorf("%s (%s): %d %s; want 500", name, raw, status, body)
		}
		mcpStatus, mcpBody := postMCPCall(t, b, id)
		if mcpStatus != http.StatusOK || !strings.Contains(mcpBody, `"isError":true`) {
			t.Errorf("%s over MCP: %d %s; want the tool's error", name, mcpStatus, mcpBody)
		}
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("%d forwarded calls reached the outside host", n)
	}
	if n := b.gate.count(&b.gate.checked); n != 0 {
		t.Errorf("%d payments checked", n)
	}
}

// postMCPCall posts run_python for session id to rp's /mcp, as JSON-RPC.
func postMCPCall(t *testing.T, rp *replica, id string) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"1","session_id":"` + id + `"}}}`
	status, _, answer := sendPaid(t, "POST", rp.ts.URL+"/mcp", body,
		http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}})
	return status, answer
}

// wordCount is a log that counts how often it was given word.
type wordCount struct {
	word string
	n    atomic.Int64
}

func (c *wordCount) Write(p []byte) (int, error) {
	c.n.Add(int64(bytes.Count(p, []byte(c.word))))
	return len(p), nil
}

// TestFleetErrorsNameNoReplica: no answer of the fleet path, over HTTP or
// MCP, names the replica that holds a session or its address (a holder
// that does not answer, an address the registry should not hold, a host
// gone): they are in the log alone.
func TestFleetErrorsNameNoReplica(t *testing.T) {
	reg := &fakeRegistry{places: map[string]sandboxd.SessionPlace{}}
	b := newFleetReplica(t, reg, "b")
	const holder = "holder-7c1e9a"
	logged := &wordCount{word: holder}
	b.srv.Log = slog.New(slog.NewTextHandler(logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b.h = b.srv.Handler()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	places := map[string]sandboxd.SessionPlace{
		"unreachable": {URL: deadURL},
		"bad address": {URL: "http://ops:hunter2@" + strings.TrimPrefix(deadURL, "http://") + "/ops-only"},
		"host gone":   {URL: deadURL, Ended: true, Why: "this session's host is gone"},
	}
	i := 0
	for name, p := range places {
		i++
		id := fmt.Sprintf("ses_%032x", 0xe770+i)
		p.Replica, p.Environment = holder, "python"
		reg.places[sandboxd.SessionHash(id)] = p
		u, _ := url.Parse(p.URL)
		secrets := []string{holder, u.Host, u.Port(), "hunter2", "ops-only"}
		status, _, body := sendPaid(t, "POST", b.ts.URL+"/v1/sessions/"+id+"/code", `{"code":"1"}`, nil)
		_, mcpBody := postMCPCall(t, b, id)
		for _, s := range secrets {
			if strings.Contains(body, s) {
				t.Errorf("%s: the answer (%d %s) names %q", name, status, body, s)
			}
			if strings.Contains(mcpBody, s) {
				t.Errorf("%s over MCP: the answer %s names %q", name, mcpBody, s)
			}
		}
		if n := logged.n.Load(); n < int64(2*i) {
			t.Errorf("%s: the log names the holder %d times so far, want at least %d (each HTTP and MCP call)", name, n, 2*i)
		}
	}
}

// stallUnknown is a registry whose lookups of sessions it does not know
// hang until release is closed, as a database under a flood of them.
type stallUnknown struct {
	sandboxd.SessionRegistry
	known   string
	release chan struct{}
	stalled atomic.Int64
}

func (s *stallUnknown) Locate(ctx context.Context, hash string) (sandboxd.SessionPlace, error) {
	if hash != s.known {
		s.stalled.Add(1)
		defer s.stalled.Add(-1)
		select {
		case <-s.release:
		case <-ctx.Done():
			return sandboxd.SessionPlace{}, ctx.Err()
		}
	}
	return s.SessionRegistry.Locate(ctx, hash)
}

// TestFleetLookupFloodIsPerClient: one client flooding a replica with calls
// for random session ids, its lookups hanging on the registry, is refused
// (429) past its own share of lookups; another client's call for a real
// session, held by another replica, is still looked up and forwarded.
func TestFleetLookupFloodIsPerClient(t *testing.T) {
	reg := &fakeRegistry{places: map[string]sandboxd.SessionPlace{}}
	a, b := newFleetReplica(t, reg, "a"), newFleetReplica(t, reg, "b")
	path := openCodePath(t, a)
	id := strings.TrimSuffix(strings.TrimPrefix(path, "/v1/sessions/"), "/code")
	stall := &stallUnknown{SessionRegistry: b.srv.Fleet.Registry, known: sandboxd.SessionHash(id), release: make(chan struct{})}
	b.srv.Fleet.Registry = stall
	released := false
	release := func() {
		if !released {
			released = true
			close(stall.release)
		}
	}
	defer release()

	const flood = 3 * maxLookups
	flooder := http.Header{"X-Forwarded-For": {"198.51.100.66"}}
	var answered, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range flood {
		wg.Go(func() {
			status, _, _ := sendPaid(t, "POST", fmt.Sprintf("%s/v1/sessions/ses_%032x/code", b.ts.URL, i+1), `{"code":"1"}`, flooder)
			if status == http.StatusTooManyRequests {
				refused.Add(1)
			}
			answered.Add(1)
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for answered.Load()+stall.stalled.Load() < flood && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("flood: %d lookups hang, %d answered (%d of them 429)", stall.stalled.Load(), answered.Load(), refused.Load())

	status, _, body := sendPaid(t, "POST", b.ts.URL+path, `{"code":"6*7"}`, http.Header{"X-Forwarded-For": {"198.51.100.7"}})
	if status != http.StatusOK {
		t.Errorf("another client's call during the flood: %d %s; want it forwarded and served", status, body)
	}
	if refused.Load() == 0 || stall.stalled.Load() > maxLookupsPerClient {
		t.Errorf("the flooding client had %d lookups in flight and %d calls refused; want at most %d in flight, the rest 429",
			stall.stalled.Load(), refused.Load(), maxLookupsPerClient)
	}
	if _, _, runs := a.engine.counts(); runs != 1 {
		t.Errorf("a ran %d calls, want the other client's one", runs)
	}
	release()
	wg.Wait()
}
