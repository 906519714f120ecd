package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// mustResult decodes one step's outcome as batch.mjs prints it.
func mustResult(tb testing.TB, raw string) (r payResult) {
	tb.Helper()
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		tb.Fatalf("%s: %v", raw, err)
	}
	return r
}

// TestPayResultCheck: a run must print 1, an open must give a session, and
// a paid step must settle the price in a transaction unless it is a voucher.
func TestPayResultCheck(t *testing.T) {
	const run = `"status":200,"body":{"status":"ok","stdout":"1\n"}`
	for _, c := range []struct {
		name, raw, paid string
		open, ok        bool
	}{
		{"free run", `{` + run + `}`, "", false, true},
		{"wrong output", `{"status":200,"body":{"status":"ok","stdout":"2\n"}}`, "", false, false},
		{"client error", `{"status":0,"error":"fetch failed"}`, "", false, false},
		{"open", `{"status":201,"body":{"session_id":"ses_1"}}`, "", true, true},
		{"open without a session", `{"status":402,"body":{}}`, "", true, false},
		{"voucher", `{` + run + `,"settlement":{"success":true,"extra":{"chargedAmount":"5000"}}}`, "voucher", false, true},
		{"voucher on chain", `{` + run + `,"settlement":{"success":true,"transaction":"0x1","extra":{"chargedAmount":"5000"}}}`,
			"voucher", false, false},
		{"voucher of another price", `{` + run + `,"settlement":{"success":true,"extra":{"chargedAmount":"10000"}}}`,
			"voucher", false, false},
		{"deposit", `{` + run + `,"settlement":{"success":true,"transaction":"0x1","extra":{"chargedAmount":"5000"}}}`,
			"deposit", false, true},
		{"deposit without a transaction", `{` + run + `,"settlement":{"success":true,"extra":{"chargedAmount":"5000"}}}`,
			"deposit", false, false},
		{"exact", `{` + run + `,"settlement":{"success":true,"transaction":"0x1"}}`, "exact", false, true},
		{"exact failed", `{` + run + `,"settlement":{"success":false,"transaction":"0x1"}}`, "exact", false, false},
		{"paid without a settlement", `{` + run + `}`, "exact", false, false},
	} {
		err := mustResult(t, c.raw).check(c.open, c.paid, channelPrice)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.ok)
		}
	}
}

// TestTimingsSplitACall: a paid call's wall time splits into the 402, the
// answer and the client's own rest; Server-Timing gives the server's
// phases and the payment's.
func TestTimingsSplitACall(t *testing.T) {
	r := mustResult(t, `{"ms":14,"requestMs":[2,7],"timing":"payment;dur=1, program;dur=2, settle;dur=0.5"}`)
	tm := timingsOf([]payResult{r})
	ms := func(l latencies) time.Duration { return l[0] }
	if ms(tm.wall) != 14*time.Millisecond || ms(tm.quote) != 2*time.Millisecond || ms(tm.answer) != 7*time.Millisecond ||
		ms(tm.own) != 5*time.Millisecond || ms(tm.server) != 3500*time.Microsecond || ms(tm.pay) != 1500*time.Microsecond {
		t.Fatalf("%+v", tm)
	}
	free := timingsOf([]payResult{mustResult(t, `{"ms":3,"requestMs":[2.5]}`)})
	if len(free.quote) != 0 || free.answer[0] != 2500*time.Microsecond || len(free.server) != 0 {
		t.Fatalf("free: %+v", free)
	}
}

// TestChainLogWord reads the Claimed event's second word, the channel's
// total claimed.
func TestChainLogWord(t *testing.T) {
	l := chainLog{Data: "0x" + strings.Repeat("0", 60) + "1388" + strings.Repeat("0", 59) + "186a0"}
	if l.word(0) != 5000 || l.word(1) != 100000 || l.word(2) != 0 {
		t.Fatalf("words %d %d %d", l.word(0), l.word(1), l.word(2))
	}
}

// TestChannelsTableVerdicts: the deltas and the gas ratio are held to
// their targets, and every claim and sweep counts in the gas.
func TestChannelsTableVerdicts(t *testing.T) {
	call := func(ms string) payResult { return mustResult(t, `{"ms":`+ms+`,"requestMs":[1]}`) }
	r := channelsReport{rows: map[string][]payResult{
		rowFree: {call("3")}, rowVoucher: {call("12")}, rowFreeSession: {call("3")}, rowVoucherSession: {call("14")},
		rowExact: {call("1000")}, rowDeposit: {call("2000")},
	}, exactGas: []uint64{66000, 66100}, gas: channelGas{calls: 20, deposit: 121300, claims: []uint64{65800, 23000},
		sweeps: []uint64{46500}}}
	var b strings.Builder
	channelsTable(&b, options{blockTime: 2 * time.Second, channelCalls: 1}, r)
	out := b.String()
	for _, want := range []string{
		"| voucher − free, one-shot | p50 +9.0 ms, p95 +9.0 ms | p50 ≤ 10 ms | PASS |",
		"| voucher − free, session call | p50 +11.0 ms, p95 +11.0 ms | p50 ≤ 10 ms | MISS |",
		"(deposit 121.3 k + claims (65.8 k + 23.0 k) + sweeps 46.5 k) ÷ 20 = 12.8 k against exact's 66.0 k",
		"0.194× | < 0.25× | PASS |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}
