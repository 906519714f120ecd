package interop

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// The hostile payer's attacks on the payment flow, in both
// settlement modes, with payments signed by the official client (sign.mjs).

// refusalDelay is how long the slow proxy holds a refusal: a facilitator or RPC node under
// load, which the attacker makes busy with payments that will be refused. It is longer
// than runtime.queue_wait (2 s), so a check that held a sandbox would turn everyone queued
// behind it away with 429.
const refusalDelay = 3 * time.Second

// TestAttackFlowOnchain runs the attacks with sandboxd settling on chain, its chain reads
// going through a proxy that answers refusals (reverted calls) slowly.
func TestAttackFlowOnchain(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "onchain", slowRefusals)
	runAttackFlow(t, c, "attack-onchain", env)
}

// TestAttackFlowFacilitator runs the attacks with sandboxd settling through the official
// facilitator, behind a proxy that answers its refusals (isValid false) slowly.
func TestAttackFlowFacilitator(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "facilitator", slowRefusals)
	runAttackFlow(t, c, "attack-facilitator", env)
}

func runAttackFlow(t *testing.T, c *chain, name string, modeEnv []string) {
	// Two sandboxes: few enough that 24 payers holding one each while they are checked
	// would lock out everyone else.
	env := append(paymentEnv(modeEnv), "SANDBOX_RUNTIME_MAX_CONCURRENCY=2")
	svc := startService(t, instance(name), true, env...)
	url := svc.URL + "/v1/code"
	payerKey := writeKey(t, "payer.key", payer.key)
	t.Run("hang-up mid-run, then replay", func(t *testing.T) { testHangUpThenReplay(t, c, url, payerKey) })
	t.Run("window too short for the run", func(t *testing.T) { testShortWindow(t, c, url, payerKey) })
	t.Run("24 unfunded payers and one paying", func(t *testing.T) { testUnfundedFlood(t, c, url, payerKey) })
}

// signed is one payment header signed by sign.mjs.
type signed struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Payer string `json:"payer"`
}

// signPayments has the official client sign payments for url's terms.
func signPayments(t *testing.T, url string, args ...string) []signed {
	t.Helper()
	var out struct {
		Headers []signed `json:"headers"`
		Error   string   `json:"error"`
	}
	runNode(t, clientTimeout, &out, "sign.mjs", append([]string{"--url", url}, args...)...)
	if len(out.Headers) == 0 {
		t.Fatalf("sign.mjs signed nothing: %s", out.Error)
	}
	return out.Headers
}

// paidPost sends code with the payment h, giving up after timeout; it returns the status
// (0 when it gave up or the connection failed), the decoded body and the headers.
func paidPost(t *testing.T, url string, h signed, code string, timeout time.Duration) (int, runBody, http.Header) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"language": "python", "code": code})
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(h.Name, h.Value)
	res, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return 0, runBody{}, nil
	}
	defer res.Body.Close()
	var rb runBody
	raw, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(raw, &rb)
	return res.StatusCode, rb, res.Header
}

// testHangUpThenReplay: a payer sends a valid payment, hangs up while its program
// runs, and sends the same payment again. The run it left is completed and settled (the
// payee is paid without the replay), and the replay is refused: one authorization, one
// run, exactly one transfer.
func testHangUpThenReplay(t *testing.T, c *chain, url, keyFile string) {
	before := snapshot(t, c)
	h := signPayments(t, url, "--key-file", keyFile)[0]
	if status, _, _ := paidPost(t, url, h, "import time\ntime.sleep(2)\nprint('done')", 700*time.Millisecond); status != 0 {
		t.Fatalf("the call answered %d before the hang-up; the program sleeps 2 s", status)
	}
	waitFor(20*time.Second, func() bool { return c.balance(t, payee.address) != before.payee })
	if c.balance(t, payee.address) == before.payee {
		t.Fatal("the run the payer hung up on was not settled (its payment was released for another run)")
	}
	status, body, _ := paidPost(t, url, h, "print(6*7)", 30*time.Second)
	if status != http.StatusPaymentRequired || body.Stdout != nil {
		t.Fatalf("the same payment sent again: status %d, body %v; want 402 without a run", status, body)
	}
	time.Sleep(300 * time.Millisecond)
	expectMoved(t, c, before, payer.address)
}

// testShortWindow: the official client signs an authorization valid 8 s ahead
// (the old check wanted 6 s), for a program of 4.5 s: it is refused with a 402 naming
// valid_before, before it runs, and nothing is sent on chain.
func testShortWindow(t *testing.T, c *chain, url, keyFile string) {
	before := snapshot(t, c)
	h := signPayments(t, url, "--key-file", keyFile, "--valid-for", "8")[0]
	start := time.Now()
	status, body, header := paidPost(t, url, h, "import time\ntime.sleep(4.5)\nprint(1)", 30*time.Second)
	took := time.Since(start)
	if status != http.StatusPaymentRequired || body.Stdout != nil {
		t.Fatalf("a payment valid 8 s for a 4.5 s run: status %d, body %v; want 402", status, body)
	}
	if !strings.Contains(body.Error, "invalid_exact_evm_payload_authorization_valid_before") || header.Get("PAYMENT-REQUIRED") == "" {
		t.Errorf("402 %q (terms %v): want the valid_before check named and the terms", body.Error, header.Get("PAYMENT-REQUIRED") != "")
	}
	// Run first, it would be answered after its 4.5 s sleep at the earliest; a refusal
	// takes what a loaded host makes of a signature check.
	if took >= 4500*time.Millisecond {
		t.Errorf("refused after %s: it ran first", took)
	}
	time.Sleep(300 * time.Millisecond)
	expectUnmoved(t, c, before)
}

// testUnfundedFlood: 24 payments signed by fresh unfunded keys are sent at once,
// each refused slowly by the facilitator or the chain; a paying caller sent among them
// gets its answer in normal time, never a 429; only its payment moves.
func testUnfundedFlood(t *testing.T, c *chain, url, keyFile string) {
	before := snapshot(t, c)
	flood := signPayments(t, url, "--fresh", "24")
	mine := signPayments(t, url, "--key-file", keyFile)[0]
	wait := sendAll(flood, func(h signed) int {
		status, _, _ := paidPost(t, url, h, "print(1)", 60*time.Second)
		return status
	})
	start := time.Now()
	status, body, _ := paidPost(t, url, mine, "print(6*7)", 60*time.Second)
	took := time.Since(start)
	statuses := wait()
	if status != http.StatusOK || body.Stdout == nil || *body.Stdout != "42\n" {
		t.Fatalf("the paying caller among 24 unfunded payers: status %d, body %v; want 200 with 42", status, body)
	}
	t.Logf("the paying caller was answered in %s (refusals take %s each)", took.Round(time.Millisecond), refusalDelay)
	if took > 4*refusalDelay {
		t.Errorf("the paying caller waited %s", took)
	}
	for i, s := range statuses {
		if s != http.StatusPaymentRequired && s != http.StatusTooManyRequests {
			t.Errorf("unfunded payer %d got %d, want 402 (or 429 from the check queue)", i, s)
		}
	}
	waitFor(5*time.Second, func() bool { return c.balance(t, payee.address) != before.payee })
	expectMoved(t, c, before, payer.address)
}

// sendAll sends every payment of flood at once through send, and returns once they are
// being checked (300 ms later); the function it returns waits for their statuses.
func sendAll(flood []signed, send func(signed) int) func() []int {
	var wg sync.WaitGroup
	statuses := make([]int, len(flood))
	for i, h := range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = send(h)
		}()
	}
	time.Sleep(300 * time.Millisecond)
	return func() []int {
		wg.Wait()
		return statuses
	}
}

// slowRefusals serves a reverse proxy to target that holds every refusal for
// refusalDelay: a facilitator's isValid false, a JSON-RPC error (a reverted eth_call).
// Answers that let a payment through pass at once.
func slowRefusals(t testing.TB, target string) string {
	return delayProxy(t, target, refusalDelay, func(_ string, _, answer []byte) bool {
		return bytes.Contains(answer, []byte(`"isValid":false`)) || bytes.Contains(answer, []byte(`"error":{`))
	})
}

// delayProxy serves a reverse proxy to target that holds for delay each answer for which
// hold(path, request body, answer) is true (or until the caller gives up).
func delayProxy(t testing.TB, target string, delay time.Duration, hold func(path string, req, answer []byte) bool) string {
	t.Helper()
	// A fresh connection per request: the facilitator is a Node server, which
	// closes a kept-alive connection after 5 s idle, and a POST sent on one as
	// it closes fails with a reset that sandboxd would rightly answer with 503.
	// sandboxd's own client asks /verify again on a fresh connection; this
	// proxy stands for the network, not for a facilitator that drops requests.
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, err := http.NewRequestWithContext(r.Context(), r.Method, strings.TrimRight(target, "/")+r.URL.Path, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		res, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		answer, _ := io.ReadAll(res.Body)
		if hold(r.URL.Path, body, answer) {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
			}
		}
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
