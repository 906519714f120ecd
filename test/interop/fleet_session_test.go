package interop

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"sandboxd/internal/servicetest"
	payledger "sandboxd/payments/ledger"
)

// sessionPay is what client.mjs's pay prints for a session's open or call.
type sessionPay struct {
	Status int `json:"status"`
	Body   struct {
		SessionID string  `json:"session_id"`
		Stdout    *string `json:"stdout"`
		Error     string  `json:"error"`
	} `json:"body"`
	Settlement *settleResponse `json:"settlement"`
}

// payOpen opens a paid session through replica i with the official client.
func payOpen(t *testing.T, f *fleet, i int, keyFile string) string {
	t.Helper()
	var r sessionPay
	runClient(t, &r, "pay", f.nodes[i].URL+"/v1/sessions", keyFile, "--body", "{}")
	if r.Status != http.StatusCreated || r.Body.SessionID == "" || r.Settlement == nil || !r.Settlement.Success {
		t.Fatalf("paid open through replica %d: %+v", i, r)
	}
	return r.Body.SessionID
}

// payCall runs code in session id through replica i, paid with the official client.
func payCall(t *testing.T, f *fleet, i int, keyFile, id, code string) sessionPay {
	t.Helper()
	var r sessionPay
	runClient(t, &r, "pay", f.nodes[i].URL+"/v1/sessions/"+id+"/code", keyFile, "--code", code)
	return r
}

// containersOf lists the containers of instance on the Docker daemon, in any state.
func containersOf(t *testing.T, instance string) []string {
	t.Helper()
	ids, err := servicetest.Containers(context.Background(), instance)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// metricsOf is replica i's /metrics.
func metricsOf(t *testing.T, f *fleet, i int) string {
	t.Helper()
	return f.nodes[i].metrics(t)
}

// metrics is the service's /metrics.
func (s *service) metrics(t *testing.T) string {
	t.Helper()
	res, err := httpClient.Get(s.MetricsURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// ledgerSessions is `sandboxd ledger sessions` on the fleet's ledger.
func ledgerSessions(t *testing.T, f *fleet) string {
	t.Helper()
	cmd := exec.Command(binary, "ledger", "sessions")
	cmd.Env = append(cmd.Environ(), "SANDBOX_PAYMENTS_LEDGER="+f.db, "SANDBOX_PAYMENTS_LEASE="+fleetLease.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sandboxd ledger sessions: %v\n%s", err, out)
	}
	return string(out)
}

// testFleetSessions: a session opened through replica 0 is called through
// replicas 1 and 2 in turn and keeps its state; each call is paid with the official
// client and settled once, by replica 0, which holds the session. One payment sent to
// the three replicas at once buys one run, whose answer every copy gets. The registry
// shows the session by replica, in the metrics of every replica and in `sandboxd ledger
// sessions`, without its id; after a close through replica 2 a call through replica 1 is
// a 404.
func testFleetSessions(t *testing.T, c *chain, f *fleet, keyFile string) {
	before := snapshot(t, c)
	start := time.Now()
	id := payOpen(t, f, 0, keyFile)
	steps := []struct {
		via        int
		code, want string
	}{
		{1, "x = 41", ""},
		{2, "x += 1\nprint(x)", "42\n"},
		{1, "print(x * 2)", "84\n"},
	}
	for _, s := range steps {
		r := payCall(t, f, s.via, keyFile, id, s.code)
		if r.Status != http.StatusOK || r.Body.Stdout == nil || *r.Body.Stdout != s.want || r.Settlement == nil || !r.Settlement.Success {
			t.Fatalf("%q through replica %d: %+v", s.code, s.via, r)
		}
	}

	// One payment on nine copies over the three replicas: one answer.
	var r concurrentResult
	base := "/v1/sessions/" + id + "/code"
	runClient(t, &r, "concurrent", f.nodes[0].URL+base, keyFile, "--n", "9", "--code", "x += 1\nprint(x)",
		"--also", f.nodes[1].URL+base, "--also", f.nodes[2].URL+base)
	checkOneRun(t, r, 9, "43\n")

	// The open and four calls: five transfers, each settled once, all by replica 0.
	waitFor(15*time.Second, func() bool { return c.balance(t, payee.address)-before.payee >= 5*price })
	time.Sleep(500 * time.Millisecond)
	if d := c.balance(t, payee.address) - before.payee; d != 5*price {
		t.Errorf("payee got %d, want %d (an open and four calls)", d, 5*price)
	}
	if tr := c.transfersTo(t, payee.address, before.block); len(tr) != 5 {
		t.Errorf("%d transfers, want 5", len(tr))
	}
	var settled []payledger.Entry
	for _, e := range f.rows(t, payledger.StatusSettled) {
		if !e.Created.Before(start) {
			settled = append(settled, e)
		}
	}
	if len(settled) != 5 {
		t.Errorf("%d settled rows, want 5", len(settled))
	}
	for _, e := range settled {
		if e.Replica != f.mode+"-0" {
			t.Errorf("a row settled by %s; the holder of the session, %s-0, settles every call", e.Replica, f.mode)
		}
	}

	// The registry, by replica, never by id.
	want := `sandboxd_fleet_sessions{environment="python",replica="` + f.mode + `-0"} 1`
	var m string
	waitFor(10*time.Second, func() bool { m = metricsOf(t, f, 2); return strings.Contains(m, want) })
	if !strings.Contains(m, want) {
		t.Errorf("replica 2's metrics lack %s", want)
	}
	if out := ledgerSessions(t, f); !strings.Contains(out, f.mode+"-0") || !strings.Contains(out, "python") || strings.Contains(out, id) {
		t.Errorf("sandboxd ledger sessions:\n%s", out)
	}

	req, _ := http.NewRequest(http.MethodDelete, f.nodes[2].URL+"/v1/sessions/"+id, nil)
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("close through replica 2: %d", res.StatusCode)
	}
	if after := payCall(t, f, 1, keyFile, id, "print(x)"); after.Status != http.StatusNotFound || !strings.Contains(after.Body.Error, "closed") {
		t.Errorf("a call after the close: %+v", after)
	}
}

// testFleetSessionKill: replica 0, which holds a session, is SIGKILLed.
// Once its lease runs out a call for the session through replica 1 or 2 is a 404 that
// says its host is gone, and nothing is charged; when replica 0 comes back, its
// containers (the session's among them) are reaped, and a call through it is the same 404.
func testFleetSessionKill(t *testing.T, c *chain, f *fleet, keyFile string) {
	id := payOpen(t, f, 0, keyFile)
	if r := payCall(t, f, 1, keyFile, id, "y = 1"); r.Status != http.StatusOK {
		t.Fatalf("a call before the kill: %+v", r)
	}
	instance := f.nodes[0].Instance
	// Its containers: the session's and the pools'.
	held := containersOf(t, instance)
	if len(held) < 2 {
		t.Fatalf("containers of replica 0 before the kill: %v; want the session's beside the pools'", held)
	}
	waitFor(10*time.Second, func() bool { return c.balance(t, payee.address) > 0 })
	time.Sleep(500 * time.Millisecond)
	before := snapshot(t, c)
	if err := f.nodes[0].Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-f.nodes[0].Exited()

	var r sessionPay
	waitFor(8*fleetLease, func() bool {
		r = payCall(t, f, 1, keyFile, id, "print(y)")
		return r.Status == http.StatusNotFound
	})
	if r.Status != http.StatusNotFound || !strings.Contains(r.Body.Error, "host is gone") {
		t.Fatalf("a call through replica 1 after the lease: %+v", r)
	}
	if r := payCall(t, f, 2, keyFile, id, "print(y)"); r.Status != http.StatusNotFound || !strings.Contains(r.Body.Error, "host is gone") {
		t.Errorf("a call through replica 2 after the lease: %+v", r)
	}
	// A call knows the host is gone from its lease; the row is ended by the next
	// pass of a live replica's registry loop (every lease/3), so the listing follows.
	var listed string
	waitFor(2*fleetLease, func() bool {
		listed = ledgerSessions(t, f)
		return strings.Contains(listed, "REPLICA") && !strings.Contains(listed, f.mode+"-0")
	})
	if !strings.Contains(listed, "REPLICA") || strings.Contains(listed, f.mode+"-0") {
		t.Errorf("the killed replica's session is still listed open:\n%s", listed)
	}
	f.nodes[0] = f.start(t, 0)
	now := containersOf(t, instance)
	for _, c := range held {
		id, _, _ := strings.Cut(c, " ")
		for _, n := range now {
			if strings.HasPrefix(n, id+" ") {
				t.Errorf("container %s of the killed replica outlived its return; want it reaped", c)
			}
		}
	}
	if r := payCall(t, f, 0, keyFile, id, "print(y)"); r.Status != http.StatusNotFound || !strings.Contains(r.Body.Error, "host is gone") {
		t.Errorf("a call through the restarted replica 0: %+v", r)
	}
	time.Sleep(500 * time.Millisecond)
	expectUnmoved(t, c, before)
}
