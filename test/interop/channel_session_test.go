package interop

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// sessionStepOf is a call of src in the session batch.mjs opened earlier in its run.
func sessionStepOf(base, src string) batchCall {
	return batchCall{URL: base + "/v1/sessions/${session}/code", Method: "POST", Body: map[string]any{"code": src}}
}

// stdoutOf is the stdout of a run's answer, "" when there is none.
func stdoutOf(body answerBody) string {
	var b runBody
	if json.Unmarshal(body, &b) != nil || b.Stdout == nil {
		return ""
	}
	return *b.Stdout
}

// TestChannelSession: the official batch-settlement client opens a session with a deposit
// and makes calls in it with vouchers, the session keeping its state; each is charged the
// price on the one channel. The session belongs to the channel's payer: another payer's
// channel is refused with 403 there, whether it brings a deposit (nothing is collected) or
// a voucher (nothing is charged: its next call elsewhere is charged as its second), and
// nothing runs for it. The owner, with a fresh client that knows nothing of its channel,
// recovers the charged total (from the chain, and the corrective 402 for what is not
// claimed yet) and goes on where it was.
func TestChannelSession(t *testing.T) {
	mustInterop(t)
	c := startChannelChain(t, payer, other)
	svc := startService(t, instance("channel-session"), true, channelEnv(t, c, "onchain", nil)...)
	key := writeKey(t, "payer.key", payer.key)
	out := payByChannel(t, c, key, 1,
		batchCall{URL: svc.URL + "/v1/sessions", Method: "POST", Body: map[string]any{"environment": "python"}},
		sessionStepOf(svc.URL, "x = 41"), sessionStepOf(svc.URL, "x += 1\nprint(x)"), sessionStepOf(svc.URL, "print(x * 2)"))
	var opened struct {
		SessionID string `json:"session_id"`
	}
	open := out.Results[0]
	if json.Unmarshal(open.Body, &opened) != nil || open.Status != 201 || opened.SessionID == "" || open.Settlement == nil ||
		!open.Settlement.Success || !txHash.MatchString(open.Settlement.Transaction) || open.Settlement.Amount != "50000" {
		t.Fatalf("the opening paid by a deposit: %+v body %s", open, open.Body)
	}
	for i, want := range []string{"", "42\n", "84\n"} {
		r := out.Results[i+1]
		if r.Status != 200 || stdoutOf(r.Body) != want || r.Settlement == nil || !r.Settlement.Success ||
			r.Settlement.Transaction != "" || r.Settlement.Extra.ChannelState.ChargedCumulativeAmount != strconv.Itoa((i+2)*price) {
			t.Fatalf("session call %d paid by a voucher: %+v body %s", i, r, r.Body)
		}
	}
	id := open.Settlement.Extra.ChannelState.ChannelID

	// Another payer, in the owner's session: a deposit, then (its channel funded by a call of
	// its own) a voucher.
	inSession := svc.URL + "/v1/sessions/" + opened.SessionID + "/code"
	foreign := batchCall{URL: inSession, Method: "POST", Body: map[string]any{"code": "print(x)"}}
	runs := runsOf(t, svc)
	theirs := payByChannel(t, c, writeKey(t, "other.key", other.key), 1,
		foreign, codeCall(svc.URL, "print(6*7)"), foreign, codeCall(svc.URL, "print(6*7)"))
	for _, i := range []int{0, 2} {
		if r := theirs.Results[i]; r.Status != 403 || r.Settlement != nil || strings.Contains(string(r.Body), "stdout") {
			t.Errorf("another payer's %s in the session: %+v body %s; want 403, nothing settled or run",
				map[int]string{0: "deposit", 2: "voucher"}[i], r, r.Body)
		}
	}
	if _, charged := checkCharged(t, []batchStep{theirs.Results[1], theirs.Results[3]}, 0); charged != 2*price {
		t.Errorf("the other payer was charged %d for two answers, want %d", charged, 2*price)
	}
	if got := runsOf(t, svc) - runs; got != 2 {
		t.Errorf("%d runs for the other payer's four calls, want 2 (its own)", got)
	}
	if got := 10_000_000 - c.balance(t, other.address); got != 50_000 {
		t.Errorf("the other payer paid out %d, want only its one deposit (50000)", got)
	}

	// The owner, from a client with no state: the corrective 402 tells it the charged total.
	again := payByChannel(t, c, key, 1, batchCall{URL: inSession, Method: "POST", Body: map[string]any{"code": "print(x)"}})
	if r := again.Results[0]; r.Status != 200 || stdoutOf(r.Body) != "42\n" || r.Settlement == nil ||
		r.Settlement.Extra.ChannelState.ChargedCumulativeAmount != strconv.Itoa(5*price) {
		t.Fatalf("the owner's call from a fresh client: %+v body %s", r, r.Body)
	}
	if st := escrowState(t, c, id); st.Balance.Int64() != 50_000 {
		t.Errorf("the owner's channel holds %s, want its one deposit", st.Balance)
	}
}
