package interop

import (
	"encoding/json"
	"strconv"
	"testing"
)

// mcpChannelCall is one call of mcp.mjs's channel scenario: the payload type the client
// paid with, and the result.
type mcpChannelCall struct {
	Kind   string    `json:"kind"`
	Result mcpResult `json:"result"`
}

// mcpChannelOutcome is what mcp.mjs's channel scenario prints.
type mcpChannelOutcome struct {
	Error    string           `json:"error"`
	Tools    []mcpTool        `json:"tools"`
	Calls    []mcpChannelCall `json:"calls"`
	OverHTTP struct {
		Status     int                `json:"status"`
		Body       runBody            `json:"body"`
		Settlement *channelSettlement `json:"settlement"`
	} `json:"overHTTP"`
	Replayed mcpResult      `json:"replayed"`
	After    mcpChannelCall `json:"after"`
}

// settledOver is the settle report in an MCP result's _meta, nil when there is none.
func settledOver(t *testing.T, r mcpResult) *channelSettlement {
	t.Helper()
	report, ok := r.Meta["x402/payment-response"]
	if !ok {
		return nil
	}
	raw, _ := json.Marshal(report)
	var s channelSettlement
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf(`_meta["x402/payment-response"] = %s: %v`, raw, err)
	}
	return &s
}

// TestChannelMCP: an agent pays run_python over MCP through a batch-settlement channel, the
// payload built by the official client scheme in _meta["x402/payment"]: a deposit, then
// vouchers, each run delivered with the settle report in _meta["x402/payment-response"]
// carrying chargedAmount and the channel's state, which the client takes back. One channel
// pays HTTP and MCP alike: a voucher that bought an answer over HTTP and is sent again over
// MCP gets the corrective result (isError, the bare code, the charged total, no settle
// report) and runs nothing, and the client's next call is charged where it left off.
func TestChannelMCP(t *testing.T) {
	mustInterop(t)
	c := startChannelChain(t, payer)
	svc := startService(t, instance("channel-mcp"), true, channelEnv(t, c, "onchain", nil)...)
	runs := runsOf(t, svc)
	var out mcpChannelOutcome
	runNode(t, mcpTimeout, &out, "mcp.mjs", "channel", "--url", svc.URL+"/mcp", "--key-file", writeKey(t, "payer.key", payer.key),
		"--rpc", c.rpc, "--http-url", svc.URL+"/v1/code", "--n", "3")
	if out.Error != "" {
		t.Fatalf("mcp.mjs channel: %s", out.Error)
	}
	checkTools(t, out.Tools)
	var settled []*channelSettlement
	for i, call := range out.Calls {
		checkRun(t, call.Result)
		if want := map[bool]string{true: "deposit", false: "voucher"}[i == 0]; call.Kind != want {
			t.Errorf("call %d paid with a %s payload, want a %s", i, call.Kind, want)
		}
		settled = append(settled, settledOver(t, call.Result))
	}
	id, charged := checkSettled(t, settled, 0)

	h := out.OverHTTP
	if h.Status != 200 || h.Body.Stdout == nil || *h.Body.Stdout != "42\n" {
		t.Fatalf("the voucher over HTTP: %d %s", h.Status, h.Body)
	}
	checkSettled(t, []*channelSettlement{h.Settlement}, charged)

	r := out.Replayed
	terms := paymentRequired{}
	raw, _ := json.Marshal(r.StructuredContent)
	_ = json.Unmarshal(raw, &terms)
	if r.Thrown != "" || !r.IsError || terms.Error != codeMismatch || terms.corrective() != strconv.FormatInt(charged+price, 10) {
		t.Errorf("the HTTP voucher sent again over MCP: thrown %q, isError %v, %s; want the corrective result, %s at %d",
			r.Thrown, r.IsError, raw, codeMismatch, charged+price)
	}
	if s := settledOver(t, r); s != nil {
		t.Errorf("the corrective result carries a settle report: %+v", s)
	}

	checkRun(t, out.After.Result)
	after, _ := checkSettled(t, []*channelSettlement{settledOver(t, out.After.Result)}, charged+price)
	if after != id {
		t.Errorf("the last call paid channel %s, the first %s", after, id)
	}
	if got := runsOf(t, svc) - runs; got != len(out.Calls)+2 {
		t.Errorf("%d runs, want %d: the calls paid, nothing for the replay", got, len(out.Calls)+2)
	}
}
