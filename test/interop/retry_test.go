package interop

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sandboxd/internal/servicetest"
)

// tokenCode prints a token of the run's own randomness: two runs never answer alike.
const tokenCode = "import os\nprint(os.urandom(8).hex())"

// retryResult is what test/interop/retry.mjs prints.
type retryResult struct {
	OK    bool        `json:"ok"`
	Error string      `json:"error"`
	Steps []retryStep `json:"steps"`
}

// retryStep is one step of retry.mjs: the first attempt's error when its answer was lost,
// and the answer that came (to the retry, when there was one).
type retryStep struct {
	Dropped         string          `json:"dropped"`
	Attempts        int             `json:"attempts"`
	Status          int             `json:"status"`
	Text            string          `json:"text"`
	PaymentResponse string          `json:"paymentResponse"`
	Replayed        string          `json:"replayed"`
	RetryAfter      string          `json:"retryAfter"`
	Header          string          `json:"header"`
	ID              string          `json:"id"`
	IsError         bool            `json:"isError"`
	Structured      string          `json:"structured"`
	Meta            map[string]any  `json:"meta"`
	Settlement      json.RawMessage `json:"settlement"`
}

// retryCall is one step for retry.mjs (see its header).
type retryCall struct {
	URL       string         `json:"url,omitempty"`
	Body      map[string]any `json:"body,omitempty"`
	ID        string         `json:"id,omitempty"`
	KeyFile   string         `json:"keyFile,omitempty"`
	RetryURL  string         `json:"retryUrl,omitempty"`
	ResendOf  *int           `json:"resendOf,omitempty"`
	MCP       string         `json:"mcp,omitempty"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// runRetry runs steps through retry.mjs paying with keyFile (extra: --scheme, --rpc).
func runRetry(t *testing.T, keyFile string, steps []retryCall, extra ...string) []retryStep {
	t.Helper()
	raw, _ := json.Marshal(steps)
	var out retryResult
	runNode(t, 4*time.Minute, &out, "retry.mjs", append([]string{"--key-file", keyFile, "--steps", string(raw)}, extra...)...)
	if !out.OK || len(out.Steps) != len(steps) {
		t.Fatalf("retry.mjs: %+v", out)
	}
	return out.Steps
}

// pythonBody is the body of a paid call running code.
func pythonBody(code string) map[string]any {
	return map[string]any{"language": "python", "code": code}
}

// dropper is a DropProxy's rule that drops the answer of one paid request once armed: one
// carrying PAYMENT-SIGNATURE, or an MCP message carrying _meta["x402/payment"].
type dropper struct{ countdown atomic.Int32 }

// arm has the next paid request's answer dropped.
func (d *dropper) arm() { d.armNth(1) }

// armNth has the answer of the nth paid request from now dropped.
func (d *dropper) armNth(n int32) { d.countdown.Store(n) }

// rule is the proxy's rule.
func (d *dropper) rule(r servicetest.ProxyRequest) bool {
	paid := r.Header.Get("PAYMENT-SIGNATURE") != "" || bytes.Contains(r.Body, []byte(`"x402/payment"`))
	return paid && d.countdown.Load() > 0 && d.countdown.Add(-1) == 0
}

// dropProxy serves a DropProxy to target with a dropper, disarmed.
func dropProxy(t *testing.T, target string) (*servicetest.DropProxy, *dropper) {
	t.Helper()
	d := &dropper{}
	return servicetest.StartDropProxy(t, target, d.rule), d
}

// startBehindProxy starts a service named name with env, healthy, behind a drop proxy (with
// its dropper, disarmed), and writes the payer's key; it returns the proxy, the dropper and
// the key file.
func startBehindProxy(t *testing.T, name string, env []string) (*servicetest.DropProxy, *dropper, string) {
	t.Helper()
	svc := startService(t, instance(name), true, env...)
	p, d := dropProxy(t, svc.URL)
	return p, d, writeKey(t, "payer.key", payer.key)
}

// lastDrop is the answer p dropped last, after checking it dropped want answers in all.
func lastDrop(t *testing.T, p *servicetest.DropProxy, want int) servicetest.Dropped {
	t.Helper()
	drops := p.Drops()
	if len(drops) != want {
		t.Fatalf("the proxy dropped %d answers, want %d", len(drops), want)
	}
	return drops[want-1]
}

// checkReplayed checks that step lost its first answer (d, which the service had sent: status
// want) and that its retry got it back byte for byte, with the same PAYMENT-RESPONSE and
// Idempotent-Replayed: true.
func checkReplayed(t *testing.T, step retryStep, d servicetest.Dropped, want int) {
	t.Helper()
	if step.Dropped == "" || step.Attempts < 2 {
		t.Errorf("the first answer was not lost: %+v", step)
	}
	if d.Status != want || d.Header.Get("PAYMENT-RESPONSE") == "" {
		t.Fatalf("the service answered %d (PAYMENT-RESPONSE %q) before the drop, want %d and a settlement: %s",
			d.Status, d.Header.Get("PAYMENT-RESPONSE"), want, d.Body)
	}
	if step.Status != want || step.Text != string(d.Body) {
		t.Errorf("the retry got %d %q; want %d and the lost answer %q byte for byte", step.Status, step.Text, want, d.Body)
	}
	if step.PaymentResponse != d.Header.Get("PAYMENT-RESPONSE") {
		t.Errorf("the retry's PAYMENT-RESPONSE %q, want the original %q", step.PaymentResponse, d.Header.Get("PAYMENT-RESPONSE"))
	}
	if step.Replayed != "true" {
		t.Errorf("Idempotent-Replayed %q, want true", step.Replayed)
	}
}

// stdoutOfText is the stdout of an answer's JSON text.
func stdoutOfText(t *testing.T, text string) string {
	t.Helper()
	var a struct {
		Stdout string `json:"stdout"`
	}
	if err := json.Unmarshal([]byte(text), &a); err != nil {
		t.Fatalf("answer %q: %v", text, err)
	}
	return a.Stdout
}

// TestRetryOnchain: safe retries end to end with sandboxd settling on chain with its relayer.
func TestRetryOnchain(t *testing.T) { testRetries(t, "onchain", true) }

// TestRetryFacilitator: the same through the official facilitator; the cases that do not
// depend on the settlement (conflicts, another wallet, sandboxd call) run only onchain.
func TestRetryFacilitator(t *testing.T) { testRetries(t, "facilitator", false) }

// testRetries starts one chain (the payer and another wallet funded), one service settling
// in mode and a drop proxy in front of it, and loses a paid answer of each kind on the way:
// a one-shot call, a session call and an MCP tool call. With all, the cases of §8 too.
func testRetries(t *testing.T, mode string, all bool) {
	mustInterop(t)
	c := startAnvil(t)
	c.setup(t, map[string]int64{payer.address: 10_000_000, other.address: 10_000_000})
	p, d, key := startBehindProxy(t, "retry-"+mode, paymentEnv(settlementEnv(t, c, mode, nil)))
	t.Run("one-shot", func(t *testing.T) { testRetryOneShot(t, c, p, d, key) })
	t.Run("session", func(t *testing.T) { testRetrySession(t, c, p, d, key) })
	t.Run("mcp", func(t *testing.T) { testRetryMCP(t, c, p, d, key) })
	if !all {
		return
	}
	t.Run("hang-up", func(t *testing.T) { testRetryHangUp(t, c, p, d, key) })
	t.Run("id-conflict", func(t *testing.T) { testRetryIDConflict(t, c, p.URL, key) })
	t.Run("other-wallet", func(t *testing.T) { testRetryOtherWallet(t, c, p, d, key) })
	t.Run("sandboxd-call", func(t *testing.T) { testRetryCall(t, c, p, d, key) })
}

// testRetryOneShot: a paid POST /v1/code whose answer is lost is retried with the same
// header and gets the answer back; the chain shows one transfer.
func testRetryOneShot(t *testing.T, c *chain, p *servicetest.DropProxy, d *dropper, key string) {
	before, drops := snapshot(t, c), len(p.Drops())
	d.arm()
	steps := runRetry(t, key, []retryCall{{URL: p.URL + "/v1/code", Body: pythonBody(tokenCode)}})
	checkReplayed(t, steps[0], lastDrop(t, p, drops+1), http.StatusOK)
	if !strings.HasPrefix(steps[0].ID, "pay_") {
		t.Errorf("the payment carried id %q, want the official client's pay_…", steps[0].ID)
	}
	expectMoved(t, c, before, payer.address)
}

// testRetrySession: a session call whose answer is lost is retried and replayed without
// running again: the session's counter, 1 in the lost answer, is 2 at the next call.
// Open, call and next call: three transfers.
func testRetrySession(t *testing.T, c *chain, p *servicetest.DropProxy, d *dropper, key string) {
	before, drops := snapshot(t, c), len(p.Drops())
	counter := pythonBody("n = globals().get('n', 0) + 1\nprint(n)")
	call := p.URL + "/v1/sessions/${session}/code"
	steps := runRetry(t, key, []retryCall{{URL: p.URL + "/v1/sessions", Body: map[string]any{}}})
	if steps[0].Status != http.StatusCreated {
		t.Fatalf("open: %+v", steps[0])
	}
	var open struct {
		SessionID string `json:"session_id"`
	}
	_ = json.Unmarshal([]byte(steps[0].Text), &open)
	call = strings.Replace(call, "${session}", open.SessionID, 1)
	d.arm()
	steps = runRetry(t, key, []retryCall{{URL: call, Body: counter}, {URL: call, Body: counter}})
	checkReplayed(t, steps[0], lastDrop(t, p, drops+1), http.StatusOK)
	if got := stdoutOfText(t, steps[0].Text); got != "1\n" {
		t.Errorf("the replayed call printed %q, want 1", got)
	}
	if got := stdoutOfText(t, steps[1].Text); steps[1].Status != http.StatusOK || got != "2\n" || steps[1].Replayed != "" {
		t.Errorf("the next call: %d %q (replayed %q), want 200 and 2: the retry did not run again", steps[1].Status, got, steps[1].Replayed)
	}
	if n := len(c.transfersTo(t, payee.address, before.block)); n != 3 {
		t.Errorf("%d transfers for an open and two calls, want 3", n)
	}
}

// testRetryMCP: a paid run_python whose answer is lost is called again with the same
// payload and gets the same structuredContent, the original settle report in _meta and
// sandboxd/replayed; the chain shows one transfer.
func testRetryMCP(t *testing.T, c *chain, p *servicetest.DropProxy, d *dropper, key string) {
	before, drops := snapshot(t, c), len(p.Drops())
	d.arm()
	steps := runRetry(t, key, []retryCall{{MCP: p.URL + "/mcp", Arguments: map[string]any{"code": tokenCode}}})
	s, lost := steps[0], lastDrop(t, p, drops+1)
	if s.Dropped == "" || s.IsError || s.Meta["sandboxd/replayed"] != true {
		t.Fatalf("MCP retry: %+v", s)
	}
	first := mcpResultOf(t, lost.Body)
	if !jsonEqual(first.StructuredContent, json.RawMessage(s.Structured)) {
		t.Errorf("the retry's structuredContent %s, want the lost one %s", s.Structured, first.StructuredContent)
	}
	got, _ := json.Marshal(s.Meta["x402/payment-response"])
	if !jsonEqual(first.Meta["x402/payment-response"], json.RawMessage(got)) {
		t.Errorf("the retry's settle report %s, want the original %s", got, first.Meta["x402/payment-response"])
	}
	expectMoved(t, c, before, payer.address)
}

// lostMCP is the JSON-RPC result of a tools/call answer the proxy dropped.
type lostMCP struct {
	StructuredContent json.RawMessage            `json:"structuredContent"`
	Meta              map[string]json.RawMessage `json:"_meta"`
}

// mcpResultOf decodes a dropped MCP answer: JSON, or server-sent events carrying it.
func mcpResultOf(t *testing.T, body []byte) lostMCP {
	t.Helper()
	raw := body
	if i := bytes.Index(body, []byte("data: ")); i >= 0 {
		raw, _, _ = bytes.Cut(body[i+len("data: "):], []byte("\n"))
	}
	var msg struct {
		Result lostMCP `json:"result"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil || msg.Result.StructuredContent == nil {
		t.Fatalf("the lost MCP answer %q: %v", body, err)
	}
	return msg.Result
}
