package interop

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// other is a second funded wallet (anvil's default account 3): its payments pass the
// gate's checks, so only the session's owner rule can refuse them.
var other = account{"0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6", "0x90F79bf6EB2c4f870365E785982E1f101E93b906"}

// mcpPaidCall is one tool call of mcp.mjs's session scenario: the unpaid call whose
// terms were paid (absent in free mode), and the result.
type mcpPaidCall struct {
	Unpaid *mcpResult `json:"unpaid"`
	Result mcpResult  `json:"result"`
}

// mcpSessionOutcome is what mcp.mjs's session scenario prints.
type mcpSessionOutcome struct {
	Error   string        `json:"error"`
	Tools   []mcpTool     `json:"tools"`
	Open    mcpPaidCall   `json:"open"`
	Steps   []mcpPaidCall `json:"steps"`
	Foreign *mcpPaidCall  `json:"foreign"`
	Close   mcpResult     `json:"close"`
	After   mcpResult     `json:"after"`
}

// sessionStep is a call of the plan and what its answer must hold.
type sessionStep struct {
	code, stdout string
	result       any // the result field: a string, or nil for null
	images       int
}

// sessionPlan is the session the official client runs: three calls that build on each
// other (a variable, an import, a file in /tmp), then a chart drawn from that state.
var sessionPlan = []sessionStep{
	{code: "x = 41", result: nil},
	{code: "import json\nx += 1\nopen('/tmp/state.json', 'w').write(json.dumps({'x': x}))\nx", result: "42"},
	{code: "print(json.loads(open('/tmp/state.json').read())['x'] * 2)\n[x, json.__name__]", stdout: "84\n",
		result: "[42, 'json']"},
	{code: "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [x, x + 1, x + 2])\nplt.savefig('/tmp/chart.png')\nplt.close()\nx",
		result: "42", images: 1},
}

// runMCPSession runs mcp.mjs's session scenario of sessionPlan in the data environment.
func runMCPSession(t *testing.T, url string, extra ...string) mcpSessionOutcome {
	t.Helper()
	var steps []map[string]any
	for _, s := range sessionPlan {
		steps = append(steps, map[string]any{"code": s.code})
	}
	plan := writeArguments(t, map[string]any{"open": map[string]any{"environment": "data"}, "steps": steps})
	var out mcpSessionOutcome
	runNode(t, mcpTimeout, &out, "mcp.mjs", append([]string{"session", "--url", url, "--arguments", plan}, extra...)...)
	if out.Error != "" {
		t.Fatalf("mcp.mjs session: %s", out.Error)
	}
	return out
}

// checkSession checks the session the official client ran: opened in data, each step's
// stdout, result and images, the session's call count, its close, and the closed
// session refused. It returns the session's id.
func checkSession(t *testing.T, out mcpSessionOutcome) string {
	t.Helper()
	checkTools(t, out.Tools)
	open := out.Open.Result
	id, _ := open.StructuredContent["session_id"].(string)
	if open.Thrown != "" || open.IsError || !strings.HasPrefix(id, "ses_") || open.StructuredContent["environment"] != "data" {
		t.Fatalf("open_session: thrown %q, isError %v, %v", open.Thrown, open.IsError, open.Content)
	}
	if len(out.Steps) != len(sessionPlan) {
		t.Fatalf("%d calls ran, want %d", len(out.Steps), len(sessionPlan))
	}
	for i, want := range sessionPlan {
		r := out.Steps[i].Result
		if r.Thrown != "" || r.IsError {
			t.Fatalf("call %d: thrown %q, isError %v, %.500v", i+1, r.Thrown, r.IsError, r.Content)
		}
		sc := r.StructuredContent
		session, _ := sc["session"].(map[string]any)
		if sc["status"] != "ok" || sc["stdout"] != want.stdout || sc["result"] != want.result ||
			session["session_id"] != id || session["calls"] != float64(i+1) || sc["session_ended"] != nil {
			t.Errorf("call %d answered %v; want stdout %q, result %v, call %d", i+1, sc, want.stdout, want.result, i+1)
		}
		images := 0
		for _, c := range r.Content {
			if c.Type == "image" {
				decodePNG(t, fmt.Sprintf("call %d's image", i+1), c.Data)
				images++
			}
		}
		if images != want.images {
			t.Errorf("call %d: %d image blocks, want %d", i+1, images, want.images)
		}
	}
	if c := out.Close; c.Thrown != "" || c.IsError || c.StructuredContent["closed"] != true {
		t.Errorf("close_session: thrown %q, isError %v, %v", c.Thrown, c.IsError, c.Content)
	}
	if a := out.After; a.Thrown != "" || !a.IsError || len(a.Content) == 0 || !strings.HasPrefix(a.Content[0].Text, "404 Not Found") {
		t.Errorf("a call in the closed session: thrown %q, isError %v, %v; want a 404 tool error", a.Thrown, a.IsError, a.Content)
	}
	return id
}

// TestMCPSession: the official MCP client, free, opens a session in data with
// open_session, runs three calls in it that build on each other (a variable, an import,
// a file in /tmp) and a fourth that draws a chart from that state (an image block),
// closes it with close_session, and is then refused the closed session. Every answer's
// structuredContent passes the client's own check against the tool's output schema.
func TestMCPSession(t *testing.T) {
	mustInterop(t)
	svc := startService(t, instance("mcp-session"), true)
	waitWarm(t, svc)
	checkSession(t, runMCPSession(t, svc.URL+"/mcp"))
}

// TestMCPSessionPaid: the same session paid on anvil, each tool call paid by
// the official x402 client from the terms of its unpaid call: the opening at the open
// price (its own mcp:// resource), each call at data's price. Every paid call settles
// exactly once (its settlement in _meta, one transfer each, from the payer); another
// funded wallet's paid call in the session is a 403 tool error, runs nothing, and moves
// nothing; closing is free.
func TestMCPSessionPaid(t *testing.T) {
	mustInterop(t)
	c := startAnvil(t)
	c.setup(t, map[string]int64{payer.address: 10_000_000, other.address: 10_000_000})
	env := settlementEnv(t, c, "onchain", nil)
	svc := startService(t, instance("mcp-session-paid"), true,
		append(paymentEnv(env), "SANDBOX_ENVIRONMENTS_DATA_PRICE="+dataPrice)...)
	waitWarm(t, svc)
	before := snapshot(t, c)
	otherBefore := c.balance(t, other.address)
	out := runMCPSession(t, svc.URL+"/mcp", "--key-file", writeKey(t, "payer.key", payer.key),
		"--other-key-file", writeKey(t, "other.key", other.key))
	checkSession(t, out)

	paid := append([]mcpPaidCall{out.Open}, out.Steps...)
	wantTx := map[string]bool{}
	for i, call := range paid {
		if call.Unpaid == nil || call.Unpaid.StructuredContent["x402Version"] != 2.0 {
			t.Fatalf("paid call %d: the unpaid call got no terms", i)
		}
		resource, _ := call.Unpaid.StructuredContent["resource"].(map[string]any)
		wantURL, wantAmount := "mcp://tool/run_python", fmt.Sprint(dataPriceAtomic)
		if i == 0 {
			wantURL, wantAmount = "mcp://tool/open_session", fmt.Sprint(price)
		}
		if resource["url"] != wantURL || termsAmount(t, call.Unpaid.StructuredContent) != wantAmount {
			t.Errorf("paid call %d quoted %v for %s, want %s for %s", i, termsAmount(t, call.Unpaid.StructuredContent), resource["url"], wantAmount, wantURL)
		}
		var settled settleResponse
		raw, _ := json.Marshal(call.Result.Meta["x402/payment-response"])
		if json.Unmarshal(raw, &settled) != nil || !settled.Success || !txHash.MatchString(settled.Transaction) ||
			!strings.EqualFold(settled.Payer, payer.address) {
			t.Fatalf(`paid call %d: _meta["x402/payment-response"] = %s`, i, raw)
		}
		wantTx[strings.ToLower(settled.Transaction)] = true
	}
	if len(wantTx) != len(paid) {
		t.Errorf("%d distinct settlements for %d paid calls", len(wantTx), len(paid))
	}

	f := out.Foreign
	if f == nil || f.Unpaid == nil || !f.Result.IsError || f.Result.Meta["x402/payment-response"] != nil ||
		len(f.Result.Content) == 0 || !strings.HasPrefix(f.Result.Content[0].Text, "403 Forbidden") {
		t.Fatalf("another wallet's paid call: %+v; want a 403 tool error, nothing settled", f)
	}
	if c := out.Close; c.Meta["x402/payment-response"] != nil {
		t.Errorf("close_session carried a settlement: %v", c.Meta)
	}

	wantSum := price + int64(len(out.Steps))*dataPriceAtomic
	waitFor(5*time.Second, func() bool { return c.balance(t, payee.address)-before.payee == wantSum })
	transfers := c.transfersTo(t, payee.address, before.block)
	for _, tr := range transfers {
		if !strings.EqualFold(tr.From, payer.address) || !wantTx[strings.ToLower(tr.TxHash)] {
			t.Errorf("transfer %+v is not one of the settlements answered, from the payer", tr)
		}
	}
	if len(transfers) != len(paid) || c.balance(t, payee.address)-before.payee != wantSum {
		t.Errorf("%d transfers moving %d, want %d moving %d: one per paid call", len(transfers),
			c.balance(t, payee.address)-before.payee, len(paid), wantSum)
	}
	if got := c.balance(t, other.address); got != otherBefore {
		t.Errorf("the other wallet's balance went from %d to %d", otherBefore, got)
	}
}
