package interop

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// openPaidSession opens a session of svc paid by payer through `sandboxd session open`
// and returns its id.
func openPaidSession(t *testing.T, svc *service, key string) string {
	t.Helper()
	code, out := runSandboxd(t, "session", "open", "--key-file", key, "--url", svc.URL+"/v1/sessions")
	m := sessionIDIn.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("session open: exit %d\n%s", code, out)
	}
	return m[1]
}

// TestSessionIDNeverReachesTheFacilitator: a paid session's opening and calls, settled
// by the official facilitator, send it no session id: a call's resource is the route's
// template, so whoever reads the facilitator's traffic (or a bazaar built from it)
// learns nothing that opens, reads or ends a session.
func TestSessionIDNeverReachesTheFacilitator(t *testing.T) {
	mustInterop(t)
	var mu sync.Mutex
	var seen []string
	record := func(tb testing.TB, url string) string {
		return delayProxy(tb, url, 0, func(path string, req, _ []byte) bool {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, path+" "+string(req))
			return false
		})
	}
	_, env := startMode(t, "facilitator", record)
	svc := startService(t, instance("session-id-facilitator"), true, paymentEnv(env)...)
	key := writeKey(t, "payer.key", payer.key)
	id := openPaidSession(t, svc, key)
	if code, out := runSandboxd(t, "call", "--key-file", key, "--url", svc.URL+"/v1/code", "--session", id, "-c", "1 + 1"); code != 0 ||
		!strings.Contains(out, `"result": "2"`) {
		t.Fatalf("paid call: exit %d\n%s", code, out)
	}
	mu.Lock()
	defer mu.Unlock()
	settles := 0
	for _, s := range seen {
		if strings.Contains(s, id) || strings.Contains(s, strings.TrimPrefix(id, "ses_")) {
			t.Errorf("the facilitator was sent the session id: %.300s", s)
		}
		if strings.HasPrefix(s, "/settle ") {
			settles++
			if !strings.Contains(s, "/v1/sessions") {
				t.Errorf("a settlement without the sessions resource: %.300s", s)
			}
		}
	}
	if settles != 2 {
		t.Errorf("the facilitator settled %d payments; want 2 (the opening and the call)", settles)
	}
}

// TestUnpaidCallEndsItsSession: a payer signs for a call, then empties its wallet while
// the call runs; the settlement fails (402, nothing collected) and the session ends with
// it, so the next call, paid from a wallet funded again, cannot read what the unpaid one
// computed.
func TestUnpaidCallEndsItsSession(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "onchain", nil)
	svc := startService(t, instance("session-unpaid"), true, paymentEnv(env)...)
	key := writeKey(t, "payer.key", payer.key)
	id := openPaidSession(t, svc, key)
	done := callUnderWay(t, svc, key, id, "import time\ntime.sleep(3)\nsecret = 42")
	c.drain(t, payer.address, unfunded.address)
	r := <-done
	if r.code == 0 || !strings.Contains(r.out, "insufficient_funds") || strings.Contains(r.out, `"status": "ok"`) {
		t.Fatalf("the call whose payer emptied its wallet: exit %d\n%s", r.code, r.out)
	}
	c.setup(t, map[string]int64{payer.address: 10_000_000})
	code, out := runSandboxd(t, "call", "--key-file", key, "--url", svc.URL+"/v1/code", "--session", id, "-c", "secret")
	if code == 0 || !strings.Contains(out, "HTTP 404") || strings.Contains(out, "42") {
		t.Fatalf("the call after the unpaid one: exit %d\n%s", code, out)
	}
}

// ran is how `sandboxd call` ended: its exit code and what it printed.
type ran struct {
	code int
	out  string
}

// callUnderWay has `sandboxd call` run code in session id of svc, paid with key, and
// returns once the call is running (the session busy); the channel gets how it ended.
func callUnderWay(t *testing.T, svc *service, key, id, code string) <-chan ran {
	t.Helper()
	done := make(chan ran, 1)
	go func() {
		code, out := runSandboxd(t, "call", "--key-file", key, "--url", svc.URL+"/v1/code", "--session", id, "-c", code)
		done <- ran{code, out}
	}()
	waitFor(30*time.Second, func() bool { return sessionBusy(t, svc, id) })
	if !sessionBusy(t, svc, id) {
		t.Fatal("the call never started")
	}
	return done
}

// sessionBusy reports whether session id of svc is running a call.
func sessionBusy(t *testing.T, svc *service, id string) bool {
	t.Helper()
	res, err := httpClient.Get(svc.URL + "/v1/sessions/" + id)
	if err != nil {
		return false
	}
	defer res.Body.Close()
	var state struct {
		Busy bool `json:"busy"`
	}
	return res.StatusCode == http.StatusOK && json.NewDecoder(res.Body).Decode(&state) == nil && state.Busy
}

// drain moves every USDC of from to to, sent as from (anvil impersonates it).
func (c *chain) drain(t *testing.T, from, to string) {
	t.Helper()
	amount := c.balance(t, from)
	tx := c.sendAs(t, from, usdc, fmt.Sprintf("0xa9059cbb%s%064x", pad32(to), amount))
	waitFor(10*time.Second, func() bool { return c.balance(t, from) == 0 })
	if b := c.balance(t, from); b != 0 {
		t.Fatalf("%s still holds %d after the drain (%s)", from, b, tx)
	}
}

// TestUnfundedOpensHoldNoRoom: opens paid by unfunded keys, well signed and refused slowly
// by the chain, are in flight while a funded payer opens a session: it gets its session,
// since room is held only for a payment that checked out (it was held before the check,
// and four such opens answered every payer 429 with Retry-After of a whole idle timeout).
func TestUnfundedOpensHoldNoRoom(t *testing.T) {
	mustInterop(t)
	_, env := startMode(t, "onchain", slowRefusals)
	svc := startService(t, instance("session-unfunded"), true, append(paymentEnv(env), "SANDBOX_SESSIONS_MAX=2")...)
	// The opening's terms are the run's (sessions.open_price is the price), so payments
	// signed for /v1/code's terms pay for an opening as well.
	flood := signPayments(t, svc.URL+"/v1/code", "--fresh", "4")
	wait := sendAll(flood, func(h signed) int { return postOpen(t, svc, h) })
	key := writeKey(t, "payer.key", payer.key)
	code, out := runSandboxd(t, "session", "open", "--key-file", key, "--url", svc.URL+"/v1/sessions")
	statuses := wait()
	if code != 0 || !strings.Contains(out, "HTTP 201") {
		t.Fatalf("a funded open among unfunded ones in flight: exit %d\n%s", code, out)
	}
	for i, s := range statuses {
		if s != http.StatusPaymentRequired {
			t.Errorf("unfunded open %d answered %d, want 402", i, s)
		}
	}
}

// postOpen sends POST /v1/sessions with the payment h and returns the status.
func postOpen(t *testing.T, svc *service, h signed) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, svc.URL+"/v1/sessions", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(h.Name, h.Value)
	res, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// TestDeleteMidCallIsNotCharged: a paid call whose session is closed (DELETE) while it
// runs is the service's failure: 503, and its payment never moves.
func TestDeleteMidCallIsNotCharged(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "onchain", nil)
	svc := startService(t, instance("session-delete-mid-call"), true, paymentEnv(env)...)
	key := writeKey(t, "payer.key", payer.key)
	id := openPaidSession(t, svc, key)
	before := snapshot(t, c)
	done := callUnderWay(t, svc, key, id, "import time\ntime.sleep(4)")
	if code, out := runSandboxd(t, "session", "close", "--url", svc.URL+"/v1/sessions", id); code != 0 {
		t.Fatalf("session close: exit %d\n%s", code, out)
	}
	r := <-done
	if r.code == 0 || !strings.Contains(r.out, "503") {
		t.Fatalf("the call cut off by DELETE: exit %d\n%s", r.code, r.out)
	}
	time.Sleep(2 * time.Second) // a settlement, had one been sent, would be mined by now
	expectUnmoved(t, c, before)
}
