package channel_test

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// exactEntry is an exact terms entry of the first vector's asset and payee.
func exactEntry(tb testing.TB) x402.Requirements {
	tb.Helper()
	req := mustVectors(tb).Cases[0].Requirements
	return x402.Requirements{Scheme: x402.SchemeExact, Network: req.Network, Amount: req.Amount, Asset: req.Asset,
		PayTo: req.PayTo, MaxTimeoutSeconds: req.MaxTimeoutSeconds, Extra: x402.Extra{Name: req.Extra.Name, Version: req.Extra.Version}}
}

// TestEntry: the batch entry is exact's with the channel terms in extra,
// withdrawDelay a JSON number; it reads back with ParseExtra, and the
// official client's config for the vector's terms passes CheckConfig
// against it.
func TestEntry(t *testing.T) {
	c := mustVectors(t).Cases[0]
	e := channel.Extra{ReceiverAuthorizer: common.HexToAddress("0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65"),
		WithdrawDelay: 900, MinDeposit: big.NewInt(10000)}
	entry := channel.Entry(exactEntry(t), e)
	got, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(c.Requirements)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("Entry = %s\nwant the terms the vectors were signed for %s", got, want)
	}
	back, err := channel.ParseExtra(entry)
	if err != nil || back.ReceiverAuthorizer != e.ReceiverAuthorizer || back.WithdrawDelay != 900 || back.MinDeposit.Cmp(e.MinDeposit) != 0 ||
		back.Name != "USDC" || back.Version != "2" {
		t.Fatalf("ParseExtra = %+v, %v", back, err)
	}
	p := mustDecodePayment(t, c.Voucher.JSON)
	wantReason(t, channel.CheckConfig(p.Config, entry), "")
}

// TestParseExtra refuses terms the official client would read otherwise
// or not at all.
func TestParseExtra(t *testing.T) {
	base := `{"name":"USDC","version":"2","receiverAuthorizer":"0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65","withdrawDelay":900,"minDeposit":"10000"}`
	cases := []struct{ name, old, new string }{
		{"withdrawDelay a string", `"withdrawDelay":900`, `"withdrawDelay":"900"`},
		{"withdrawDelay below 900", `"withdrawDelay":900`, `"withdrawDelay":899`},
		{"withdrawDelay over 30 days", `"withdrawDelay":900`, `"withdrawDelay":2592001`},
		{"no withdrawDelay", `,"withdrawDelay":900`, ``},
		{"zero authorizer", `0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65`, `0x0000000000000000000000000000000000000000`},
		{"no authorizer", `"receiverAuthorizer":"0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65",`, ``},
		{"minDeposit a number", `"minDeposit":"10000"`, `"minDeposit":10000`},
	}
	req := exactEntry(t)
	if err := json.Unmarshal([]byte(base), &req.Extra); err != nil {
		t.Fatal(err)
	}
	if _, err := channel.ParseExtra(req); err != nil {
		t.Fatalf("ParseExtra(base) = %v", err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := exactEntry(t)
			if err := json.Unmarshal([]byte(strings.Replace(base, tc.old, tc.new, 1)), &r.Extra); err != nil {
				t.Fatal(err)
			}
			if e, err := channel.ParseExtra(r); err == nil {
				t.Fatalf("ParseExtra took %+v", e)
			}
		})
	}
}

// TestCorrective: the corrective entry carries channelState (with
// withdrawRequestedAt a number, amounts and refundNonce strings) and
// voucherState in the shape the official client reads, beside the terms.
func TestCorrective(t *testing.T) {
	entry := channel.Entry(exactEntry(t), channel.Extra{ReceiverAuthorizer: common.HexToAddress("0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65"),
		WithdrawDelay: 900, MinDeposit: big.NewInt(10000)})
	cs := channel.ChannelState{ChannelID: "0xbfecfdb41779011884d06b438fbd81003777cc40d362fef1b825d40f6b13a4b6", Balance: "10000",
		TotalClaimed: "0", WithdrawRequestedAt: 0, RefundNonce: "0", ChargedCumulativeAmount: "3000"}
	vs := &channel.VoucherState{SignedMaxClaimable: "3000", Signature: "0x00"}
	got, err := channel.Corrective(entry, cs, vs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var read struct {
		Scheme string `json:"scheme"`
		Extra  struct {
			WithdrawDelay json.Number     `json:"withdrawDelay"`
			ChannelState  json.RawMessage `json:"channelState"`
			VoucherState  json.RawMessage `json:"voucherState"`
		} `json:"extra"`
	}
	if err := json.Unmarshal(b, &read); err != nil {
		t.Fatal(err)
	}
	wantCS := `{"channelId":"0xbfecfdb41779011884d06b438fbd81003777cc40d362fef1b825d40f6b13a4b6","balance":"10000","totalClaimed":"0",` +
		`"withdrawRequestedAt":0,"refundNonce":"0","chargedCumulativeAmount":"3000"}`
	if read.Scheme != channel.Scheme || read.Extra.WithdrawDelay != "900" || string(read.Extra.ChannelState) != wantCS ||
		string(read.Extra.VoucherState) != `{"signedMaxClaimable":"3000","signature":"0x00"}` {
		t.Fatalf("Corrective = %s", b)
	}
	if _, err := channel.ParseExtra(got); err != nil {
		t.Fatalf("the corrective entry no longer parses: %v", err)
	}
	none, err := channel.Corrective(entry, cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := none.Extra.Member("voucherState"); ok {
		t.Fatal("voucherState without a voucher")
	}
}
