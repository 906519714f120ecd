package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sandboxd/httpapi/fleethop"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
	"sandboxd/httpapi/mcptools"
	"sandboxd/httpapi/wire"
)

// fakeRegistry is a fleet's registry in memory, shared by the replicas'
// views (registryView).
type fakeRegistry struct {
	mu     sync.Mutex
	places map[string]sandboxd.SessionPlace
	// lookups counts Locate calls.
	lookups int
}

// registryView is fakeRegistry as replica sees it.
type registryView struct {
	r            *fakeRegistry
	replica, url string
}

func (v registryView) Opened(_ context.Context, s sandboxd.SessionRecord) error {
	v.r.mu.Lock()
	defer v.r.mu.Unlock()
	v.r.places[s.Hash] = sandboxd.SessionPlace{Replica: v.replica, URL: v.url, Environment: s.Environment}
	return nil
}

func (v registryView) Called(context.Context, string, time.Time, time.Time) error { return nil }

func (v registryView) Held(context.Context, string) (int, error) { return 0, nil }

func (v registryView) Ended(_ context.Context, hash, why string) error {
	v.r.mu.Lock()
	defer v.r.mu.Unlock()
	p := v.r.places[hash]
	p.Ended, p.Why = true, why
	v.r.places[hash] = p
	return nil
}

func (v registryView) Locate(_ context.Context, hash string) (sandboxd.SessionPlace, error) {
	v.r.mu.Lock()
	defer v.r.mu.Unlock()
	v.r.lookups++
	p, ok := v.r.places[hash]
	if !ok {
		return p, sandboxd.Errorf(sandboxd.CodeNotFound, "fake", "unknown")
	}
	p.Here = p.Replica == v.replica
	return p, nil
}

// testSecret is the fleet secret of the tests.
var testSecret = []byte(strings.Repeat("s3cr3t", 8))

// replica is one replica of a test fleet: its server over fakes, listening.
type replica struct {
	srv    *Server
	gate   *fakeGate
	engine *fakeSessionEngine
	ts     *httptest.Server
	// h is srv.Handler(), which ts serves; built again by a test that
	// changes srv after (the MCP handler takes the logger when it is built).
	h http.Handler
}

// newFleetReplica starts replica name on reg.
func newFleetReplica(t *testing.T, reg *fakeRegistry, name string) *replica {
	t.Helper()
	rp := &replica{gate: &fakeGate{}, engine: &fakeSessionEngine{}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rp.h.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	view := registryView{r: reg, replica: name, url: ts.URL}
	cfg := sessionsConfig()
	cfg.MaxPerPayer = 0
	cfg.Registry = view
	rp.ts = ts
	rp.engine.result = sandboxd.SessionResult{Result: sandboxd.Result{Status: sandboxd.StatusOK, Stdout: "42\n"}}
	rp.srv = newSessionServer(t, rp.engine, rp.gate, cfg)
	rp.srv.MaxBodyBytes = 64 << 10
	rp.srv.MaxCodeBytes = 1 << 10
	// The replicas reach each other on loopback, listed as the fleet's
	// addresses (and proxies) as docs/operating.md says.
	rp.srv.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	rp.srv.Fleet = &Fleet{Registry: view, Replica: name, Secret: testSecret, Limit: func(string) time.Duration { return 10 * time.Second }}
	rp.h = rp.srv.Handler()
	return rp
}

// TestFleetForwardsSessionCalls: a session opened on replica a is called,
// looked at and closed through replica b. Each call reaches a whole, its
// payment header included; a checks, runs and settles it, b never looks at
// a payment. After the close, b answers the 404 with a's reason.
func TestFleetForwardsSessionCalls(t *testing.T) {
	reg := &fakeRegistry{places: map[string]sandboxd.SessionPlace{}}
	a, b := newFleetReplica(t, reg, "a"), newFleetReplica(t, reg, "b")
	status, _, body := sendPaid(t, "POST", a.ts.URL+"/v1/sessions", "", nil)
	if status != http.StatusCreated {
		t.Fatalf("open on a: %d %s", status, body)
	}
	var open wire.SessionResponse
	if err := json.Unmarshal([]byte(body), &open); err != nil {
		t.Fatal(err)
	}
	pay := http.Header{"Payment-Signature": {"signed-by-the-payer"}, "X-Forwarded-For": {"203.0.113.9"}}
	for i := range 2 {
		status, hdr, body := sendPaid(t, "POST", b.ts.URL+"/v1/sessions/"+open.SessionID+"/code", `{"code":"6*7"}`, pay)
		if status != http.StatusOK || !strings.Contains(body, `"stdout":"42\n"`) || hdr.Get("Payment-Response") == "" {
			t.Fatalf("call %d through b: %d %s %v", i, status, body, hdr)
		}
	}
	if _, _, runs := a.engine.counts(); runs != 2 {
		t.Errorf("a ran %d calls, want 2", runs)
	}
	if n := b.gate.count(&b.gate.checked); n != 0 {
		t.Errorf("b checked %d payments; the forwarding replica must look at none", n)
	}
	if n, s := a.gate.count(&a.gate.checked), a.gate.count(&a.gate.settled); n != 3 || s != 3 {
		t.Errorf("a checked %d and settled %d payments, want 3 and 3 (the open and two calls)", n, s)
	}
	a.gate.mu.Lock()
	last := a.gate.requests[len(a.gate.requests)-1]
	a.gate.mu.Unlock()
	if last.Signature != "signed-by-the-payer" || !strings.HasSuffix(last.ResourceURL, "/v1/sessions/{session_id}/code") {
		t.Errorf("the payment a saw: %+v", last)
	}
	if status, _, body := sendPaid(t, "GET", b.ts.URL+"/v1/sessions/"+open.SessionID, "", nil); status != http.StatusOK || !strings.Contains(body, `"calls":2`) {
		t.Errorf("GET through b: %d %s", status, body)
	}
	if status, _, body := sendPaid(t, "DELETE", b.ts.URL+"/v1/sessions/"+open.SessionID, "", nil); status != http.StatusNoContent {
		t.Errorf("DELETE through b: %d %s", status, body)
	}
	status, _, body = sendPaid(t, "POST", b.ts.URL+"/v1/sessions/"+open.SessionID+"/code", `{"code":"1"}`, pay)
	if status != http.StatusNotFound || !strings.Contains(body, "closed") {
		t.Errorf("a call for the closed session through b: %d %s", status, body)
	}
	if n := a.gate.count(&a.gate.checked) + b.gate.count(&b.gate.checked); n != 3 {
		t.Errorf("%d payments checked in all, want 3: the 404 costs nothing", n)
	}
}

// TestFleetHostGoneIsA404: a session whose replica's lease ran out is a
// 404 that says its host is gone, over HTTP and MCP, and no payment is
// looked at.
func TestFleetHostGoneIsA404(t *testing.T) {
	reg := &fakeRegistry{places: map[string]sandboxd.SessionPlace{}}
	b := newFleetReplica(t, reg, "b")
	const id = "ses_00000000000000000000000000000001"
	reg.places[sandboxd.SessionHash(id)] = sandboxd.SessionPlace{Replica: "c", URL: "http://192.0.2.1:1", Environment: "python",
		Ended: true, Why: "this session's host is gone: replica c stopped answering"}
	status, _, body := sendPaid(t, "POST", b.ts.URL+"/v1/sessions/"+id+"/code", `{"code":"1"}`, http.Header{"Payment-Signature": {"x"}})
	if status != http.StatusNotFound || !strings.Contains(body, "host is gone") {
		t.Errorf("call: %d %s", status, body)
	}
	cs := mustMCP(t, b.srv)
	res := callNamed(t, cs, toolName, map[string]any{"code": "1", "session_id": id}, nil)
	if !res.IsError || !strings.Contains(text(t, res), "404") || !strings.Contains(text(t, res), "host is gone") {
		t.Errorf("MCP call: %+v %s", res, text(t, res))
	}
	if n := b.gate.count(&b.gate.checked); n != 0 {
		t.Errorf("%d payments checked for a session whose host is gone", n)
	}
}

// TestFleetUnreachableHolderIs503: a holder that does not take the
// connection (killed, its lease not yet out) is a 503 with Retry-After, and
// nothing is checked here.
func TestFleetUnreachableHolderIs503(t *testing.T) {
	reg := &fakeRegistry{places: map[string]sandboxd.SessionPlace{}}
	b := newFleetReplica(t, reg, "b")
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	const id = "ses_00000000000000000000000000000002"
	reg.places[sandboxd.SessionHash(id)] = sandboxd.SessionPlace{Replica: "d", URL: url, Environment: "python"}
	status, hdr, body := sendPaid(t, "POST", b.ts.URL+"/v1/sessions/"+id+"/code", `{"code":"1"}`, nil)
	if status != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || !strings.Contains(body, "did not answer") {
		t.Errorf("call: %d %v %s", status, hdr, body)
	}
	if n := b.gate.count(&b.gate.checked); n != 0 {
		t.Errorf("%d payments checked", n)
	}
}

// TestFleetHopIsNeverForwardedTwice: a signed hop is served where it
// lands, whatever the registry says: a replica that lost the session
// answers its own 404 rather than sending it on (no loop between two
// replicas that disagree).
func TestFleetHopIsNeverForwardedTwice(t *testing.T) {
	reg := &fakeRegistry{places: map[string]sandboxd.SessionPlace{}}
	a, b := newFleetReplica(t, reg, "a"), newFleetReplica(t, reg, "b")
	const id = "ses_00000000000000000000000000000003"
	reg.places[sandboxd.SessionHash(id)] = sandboxd.SessionPlace{Replica: "a", URL: a.ts.URL, Environment: "python"}
	path := "/v1/sessions/" + id + "/code"
	hop := fleethop.Sign(testSecret, time.Now(), "POST", path, netip.MustParseAddr("203.0.113.7"), "a", "b")
	status, _, body := sendPaid(t, "POST", b.ts.URL+path, `{"code":"1"}`, http.Header{fleethop.Header: {hop}})
	if status != http.StatusNotFound || strings.Contains(body, "did not answer") {
		t.Errorf("a hop for a session b does not hold: %d %s", status, body)
	}
	if _, _, runs := a.engine.counts(); runs != 0 {
		t.Errorf("a ran %d calls: the hop went on", runs)
	}
}

// openCodePath opens a session on rp and returns the path of its calls.
func openCodePath(t *testing.T, rp *replica) string {
	t.Helper()
	status, _, body := sendPaid(t, "POST", rp.ts.URL+"/v1/sessions", "", nil)
	if status != http.StatusCreated {
		t.Fatal(status, body)
	}
	var open wire.SessionResponse
	if err := json.Unmarshal([]byte(body), &open); err != nil {
		t.Fatal(err)
	}
	return "/v1/sessions/" + open.SessionID + "/code"
}

// TestFleetHopRefusals: a hop header that does not verify is 403 and
// runs nothing: a forged or altered signature, another path, method or
// destination than it signs, a hop signed for another replica, a stale
// time, a replica with no secret, an older version, garbage.
func TestFleetHopRefusals(t *testing.T) {
	a := newFleetReplica(t, &fakeRegistry{places: map[string]sandboxd.SessionPlace{}}, "a")
	path := openCodePath(t, a)
	client := netip.MustParseAddr("198.51.100.4")
	now := time.Now()
	cases := map[string]string{
		"other secret": fleethop.Sign([]byte(strings.Repeat("x", 48)), now, "POST", path, client, "b", "a"),
		"other path":   fleethop.Sign(testSecret, now, "POST", "/v1/sessions", client, "b", "a"),
		"other method": fleethop.Sign(testSecret, now, "DELETE", path, client, "b", "a"),
		"stale":        fleethop.Sign(testSecret, now.Add(-2*fleethop.Skew), "POST", path, client, "b", "a"),
		"future":       fleethop.Sign(testSecret, now.Add(2*fleethop.Skew), "POST", path, client, "b", "a"),
		"garbage":      "v3;;;;;;",
		"version 1":    "v1;1;198.51.100.4;b;00",
		"version 2":    "v2;" + strconv.FormatInt(now.Unix(), 10) + ";" + strings.Repeat("0", 32) + ";198.51.100.4;b;00",
		"for another":  fleethop.Sign(testSecret, now, "POST", path, client, "b", "c"),
		"readdressed":  strings.Replace(fleethop.Sign(testSecret, now, "POST", path, client, "b", "c"), ";b;c;", ";b;a;", 1),
		"short nonce":  strings.Replace(fleethop.Sign(testSecret, now, "POST", path, client, "b", "a"), ";", ";;", 1),
		"other client": strings.Replace(fleethop.Sign(testSecret, now, "POST", path, client, "b", "a"), "198.51.100.4", "198.51.100.5", 1),
	}
	for name, hop := range cases {
		status, _, body := sendPaid(t, "POST", a.ts.URL+path, `{"code":"1"}`, http.Header{fleethop.Header: {hop}})
		if status != http.StatusForbidden || !strings.Contains(body, fleethop.Header) {
			t.Errorf("%s: %d %s", name, status, body)
		}
	}
	a.srv.Fleet.Secret = nil
	good := fleethop.Sign(testSecret, now, "POST", path, client, "b", "a")
	if status, _, body := sendPaid(t, "POST", a.ts.URL+path, `{"code":"1"}`, http.Header{fleethop.Header: {good}}); status != http.StatusForbidden {
		t.Errorf("a replica with no secret took a hop: %d %s", status, body)
	}
	if _, _, runs := a.engine.counts(); runs != 0 {
		t.Errorf("%d calls ran on refused hops", runs)
	}
	if got, err := fleethop.Verify(testSecret, "a", now, good, httptest.NewRequest("POST", path, nil)); err != nil || got.Client != client {
		t.Errorf("the hop vouches for %v, %v; want %v", got.Client, err, client)
	}
}

// TestFleetForwardsMCP: run_python with a session_id another replica
// holds is forwarded to it over MCP, paid there.
func TestFleetForwardsMCP(t *testing.T) {
	reg := &fakeRegistry{places: map[string]sandboxd.SessionPlace{}}
	a, b := newFleetReplica(t, reg, "a"), newFleetReplica(t, reg, "b")
	id := mustOpenOverMCP(t, mustMCP(t, a.srv))
	cs := mustMCP(t, b.srv)
	res := callNamed(t, cs, toolName, map[string]any{"code": "6*7", "session_id": id}, mcp.Meta{})
	if res.IsError || !strings.Contains(text(t, res), "42") {
		t.Fatalf("run_python through b: %s", text(t, res))
	}
	if _, _, runs := a.engine.counts(); runs != 1 {
		t.Errorf("a ran %d calls, want 1", runs)
	}
	res = callNamed(t, cs, mcptools.CloseToolName, map[string]any{"session_id": id}, nil)
	if res.IsError {
		t.Errorf("close_session through b: %s", text(t, res))
	}
	if opened, closed, _ := a.engine.counts(); opened != 1 || closed != 1 {
		t.Errorf("a opened %d and closed %d containers", opened, closed)
	}
	if n := b.gate.count(&b.gate.checked); n != 0 {
		t.Errorf("b checked %d payments", n)
	}
}

// TestFleetForwardKeepsOneCORSAnswer: a browser's call through another
// replica gets the holder's CORS headers once (a browser refuses an
// Access-Control-Allow-Origin sent twice), and an answer of the forwarding
// replica's own (the holder is down) still carries them.
func TestFleetForwardKeepsOneCORSAnswer(t *testing.T) {
	reg := &fakeRegistry{places: map[string]sandboxd.SessionPlace{}}
	a, b := newFleetReplica(t, reg, "a"), newFleetReplica(t, reg, "b")
	a.srv.CORSOrigins, b.srv.CORSOrigins = []string{"*"}, []string{"*"}
	status, _, body := sendPaid(t, "POST", a.ts.URL+"/v1/sessions", "", nil)
	if status != http.StatusCreated {
		t.Fatal(status, body)
	}
	var open wire.SessionResponse
	_ = json.Unmarshal([]byte(body), &open)
	browser := http.Header{"Origin": {"https://page.example"}, "Content-Type": {"application/json"}}
	status, hdr, body := sendPaid(t, "POST", b.ts.URL+"/v1/sessions/"+open.SessionID+"/code", `{"code":"1"}`, browser)
	if status != http.StatusOK || len(hdr.Values("Access-Control-Allow-Origin")) != 1 || len(hdr.Values("X-Content-Type-Options")) != 1 {
		t.Errorf("forwarded: %d, Access-Control-Allow-Origin %q, nosniff %q: %s", status,
			hdr.Values("Access-Control-Allow-Origin"), hdr.Values("X-Content-Type-Options"), body)
	}
	a.ts.Close()
	status, hdr, _ = sendPaid(t, "POST", b.ts.URL+"/v1/sessions/"+open.SessionID+"/code", `{"code":"1"}`, browser)
	if status != http.StatusServiceUnavailable || len(hdr.Values("Access-Control-Allow-Origin")) != 1 {
		t.Errorf("holder down: %d, Access-Control-Allow-Origin %q", status, hdr.Values("Access-Control-Allow-Origin"))
	}
}

// TestFleetHopIsTakenOnce: a hop copied off the wire and sent again, to the
// same replica, is a 403 and runs nothing, even while its time still
// verifies; the replica forgets it once it could no longer verify.
func TestFleetHopIsTakenOnce(t *testing.T) {
	a := newFleetReplica(t, &fakeRegistry{places: map[string]sandboxd.SessionPlace{}}, "a")
	path := openCodePath(t, a)
	hop := fleethop.Sign(testSecret, time.Now(), "POST", path, netip.MustParseAddr("198.51.100.4"), "b", "a")
	pay := http.Header{fleethop.Header: {hop}, "Payment-Signature": {"signed-by-the-payer"}}
	if status, _, body := sendPaid(t, "POST", a.ts.URL+path, `{"code":"1"}`, pay); status != http.StatusOK {
		t.Fatalf("the hop, first: %d %s", status, body)
	}
	status, _, body := sendPaid(t, "POST", a.ts.URL+path, `{"code":"2"}`, pay)
	if status != http.StatusForbidden || !strings.Contains(body, "taken already") {
		t.Errorf("the hop, again: %d %s", status, body)
	}
	if _, _, runs := a.engine.counts(); runs != 1 {
		t.Errorf("a ran %d calls, want 1", runs)
	}
}
