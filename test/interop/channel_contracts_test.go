package interop

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// escrowAddr and collectorAddr are the official addresses of the x402 batch-settlement escrow
// and its ERC-3009 deposit collector, where test/interop/chain.mjs places the stand-ins.
const (
	escrowAddr    = "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003"
	collectorAddr = "0x4020806089470a89826cB9fB1f4059150b550004"
)

// channelAuthorizer is anvil's default account 8: the facilitator's receiver authorizer,
// which signs claims and refunds and never sends a transaction.
var channelAuthorizer = account{"0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97", "0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f"}

// specHashes are the spec's EIP-712 type hashes and the escrow's domain separator on chain
// 84532, as the official code computes them (docs/design/channels.md, Appendix A).
var specHashes = map[string]string{
	"CHANNEL_CONFIG_TYPEHASH":             "0x1c9a06ceab9b0ebbd3301dc56c9111bb6d9af421356dc9ccb3b7084c755db308",
	"VOUCHER_TYPEHASH":                    "0x1e1bd6ff84c3e0d9029a292b212e039c0ca97ec497c55191a4a5874294609a69",
	"REFUND_TYPEHASH":                     "0xbe23ad087435072cd69b49cc5b92de10ee610fce7ae0ab428307972d764bb216",
	"CLAIM_ENTRY_TYPEHASH":                "0x30b9a0367528fca13c3e8ec6134c3113f1887ebe7a1ad61de0955aac288b0cf5",
	"CLAIM_BATCH_TYPEHASH":                "0x42bd57c010b870c2e96203c66341f28a6a19b4d56a74533a8eb5f706b9fd6d57",
	"RECEIVE_WITH_AUTHORIZATION_TYPEHASH": "0xd099cc98ef71107a616c4f0f941f04c322d8e254fe26b3c6668db87aae413de8",
	"DOMAIN_SEPARATOR":                    "0xfdef80764086b1e0fc6ba99f0cb9aa1d59109fda7c23d60334c89d2de44dffce",
}

// specTopics are the topic0 of the escrow's events the proof emits (Appendix A).
var specTopics = map[string]string{
	"ChannelCreated": "0x69d8248d5566bdb2ebc4d218970710d8378a2ff9b709a999e052b71970f808fa",
	"Deposited":      "0x6c2a09353b5e75e70d0b9778b80a413809bb235d46c211811c474b3346791d89",
	"Claimed":        "0x36bd546bb573e8921fdbfd934bbed62d872796b01792cd240cce27f79dd3eddd",
	"Settled":        "0x7337b4386b690fdb8ba66905b92b9d45d33bc6626ee2620c905fb150ec0cc47d",
	"Refunded":       "0xa84286cf8ebc7903a663c77c8d99aa92b600d4c2fcca872a5d4a663db4eb394b",
}

// channelProof is what test/interop/channels.mjs prints.
type channelProof struct {
	OK         bool                                      `json:"ok"`
	ChannelID  string                                    `json:"channelId"`
	Authorizer string                                    `json:"authorizer"`
	Config     map[string]any                            `json:"config"`
	Steps      []channelStep                             `json:"steps"`
	Logged     []string                                  `json:"logged"`
	Hashes     struct{ Onchain, Viem map[string]string } `json:"hashes"`
}

// channelStep is one step of the proof and the chain state read after it.
type channelStep struct {
	Name, Tx, GasUsed, To, Selector, Amount string
	Vouchers                                int
	Extra                                   struct {
		ChargedAmount string `json:"chargedAmount"`
		ChannelState  struct {
			ChargedCumulativeAmount string `json:"chargedCumulativeAmount"`
		} `json:"channelState"`
	}
	State struct {
		Channel        struct{ Balance, TotalClaimed string }
		ReceiverTotals struct{ TotalClaimed, TotalSettled string }
		RefundNonce    string
		Tokens         struct{ Payer, Receiver, Escrow string }
	}
}

// wantStep is what a step must have left on chain: the escrow call it sent (none for a
// voucher), the channel's balance and totalClaimed, the receiver's claimed and swept totals,
// the refund nonce, and the token balances of payer, receiver and escrow.
type wantStep struct {
	name, selector                     string
	balance, claimed, rClaimed, rSwept int64
	nonce                              int64
	payer, receiver, escrow            int64
}

// TestChannelContracts proves the batch-settlement escrow stand-in against the official x402
// code on anvil: the official client pays the official seller (a deposit, then vouchers), the
// seller's channel manager claims through the official facilitator (claimWithSignature) and
// sweeps (settle), two more vouchers, the client refunds (claim and refundWithSignature in one
// multicall), a last sweep. Each step's chain state, the escrow's hashes, events and reverts
// are held against the spec's values, and the official code must have logged nothing.
func TestChannelContracts(t *testing.T) {
	mustInterop(t)
	started := time.Now()
	c := startAnvil(t)
	c.setup(t, map[string]int64{payer.address: 10_000_000}, "--channels")
	var out channelProof
	runNode(t, 90*time.Second, &out, "channels.mjs", "--rpc", c.rpc,
		"--payer-key-file", writeKey(t, "payer.key", payer.key),
		"--facilitator-key-file", writeKey(t, "facilitator.key", facilitator.key),
		"--authorizer-key-file", writeKey(t, "authorizer.key", channelAuthorizer.key),
		"--receiver", payee.address, "--vouchers", "5")
	if !out.OK || len(out.Logged) > 0 {
		t.Fatalf("the official code failed or logged: ok=%v logged=%q", out.OK, out.Logged)
	}
	if !strings.EqualFold(out.Authorizer, channelAuthorizer.address) || !strings.EqualFold(fmt.Sprint(out.Config["receiverAuthorizer"]), channelAuthorizer.address) {
		t.Fatalf("receiver authorizer %s (config %v), want %s", out.Authorizer, out.Config["receiverAuthorizer"], channelAuthorizer.address)
	}
	checkChannelHashes(t, out)
	checkChannelSteps(t, out.Steps)
	checkChannelEvents(t, c)
	checkChannelReverts(t, c, out)
	checkChannelSupported(t, c)

	// Read apart from the driver: what each party holds at the end.
	for addr, want := range map[string]int64{payer.address: 10_000_000 - 7000, payee.address: 7000, escrowAddr: 0, collectorAddr: 0} {
		if got := c.balance(t, addr); got != want {
			t.Errorf("USDC of %s = %d, want %d", addr, got, want)
		}
	}
	gas := map[string]string{}
	for _, s := range out.Steps {
		if s.GasUsed != "" {
			gas[s.Name] = s.GasUsed
		}
	}
	t.Logf("gas used: %v; took %s", gas, time.Since(started).Round(time.Millisecond))
}

// checkChannelHashes holds the escrow's constants and digests against the spec and the
// official code's (viem's) own computation.
func checkChannelHashes(t *testing.T, out channelProof) {
	t.Helper()
	for name, want := range specHashes {
		if got := out.Hashes.Onchain[name]; got != want {
			t.Errorf("%s on chain = %s, want %s", name, got, want)
		}
	}
	pairs := [][3]string{
		{"channel id", out.Hashes.Onchain["getChannelId"], out.Hashes.Viem["channelId"]},
		{"voucher digest", out.Hashes.Onchain["getVoucherDigest"], out.Hashes.Viem["voucherDigest"]},
		{"refund digest", out.Hashes.Onchain["getRefundDigest"], out.Hashes.Viem["refundDigest"]},
	}
	for _, p := range pairs {
		if p[1] == "" || p[1] != p[2] {
			t.Errorf("%s: escrow %s, official code %s", p[0], p[1], p[2])
		}
	}
	if out.ChannelID != out.Hashes.Viem["channelId"] {
		t.Errorf("channel id %s, official computeChannelId %s", out.ChannelID, out.Hashes.Viem["channelId"])
	}
}

// checkChannelSteps holds each step's chain state: 1000 a call, a deposit of 10 calls' worth
// (the official seller's default minDeposit), five calls claimed and swept, two more claimed
// with the refund of the 3000 left, then swept.
func checkChannelSteps(t *testing.T, steps []channelStep) {
	t.Helper()
	const p0 = 10_000_000
	want := []wantStep{
		{"deposit", "0x140f1e75", 10000, 0, 0, 0, 0, p0 - 10000, 0, 10000},
		{"voucher2", "", 10000, 0, 0, 0, 0, p0 - 10000, 0, 10000},
		{"voucher3", "", 10000, 0, 0, 0, 0, p0 - 10000, 0, 10000},
		{"voucher4", "", 10000, 0, 0, 0, 0, p0 - 10000, 0, 10000},
		{"voucher5", "", 10000, 0, 0, 0, 0, p0 - 10000, 0, 10000},
		{"claim", "0xe43ce1f2", 10000, 5000, 5000, 0, 0, p0 - 10000, 0, 10000},
		{"settle", "0x9db32a8f", 10000, 5000, 5000, 5000, 0, p0 - 10000, 5000, 5000},
		{"voucherAfterClaim1", "", 10000, 5000, 5000, 5000, 0, p0 - 10000, 5000, 5000},
		{"voucherAfterClaim2", "", 10000, 5000, 5000, 5000, 0, p0 - 10000, 5000, 5000},
		{"refund", "0xac9650d8", 7000, 7000, 7000, 5000, 1, p0 - 7000, 5000, 2000},
		{"settleAfterRefund", "0x9db32a8f", 7000, 7000, 7000, 7000, 1, p0 - 7000, 7000, 0},
	}
	if len(steps) != len(want) {
		t.Fatalf("%d steps, want %d", len(steps), len(want))
	}
	calls := 0
	for i, w := range want {
		s := steps[i]
		st := s.State
		got := wantStep{s.Name, s.Selector, num(t, st.Channel.Balance), num(t, st.Channel.TotalClaimed),
			num(t, st.ReceiverTotals.TotalClaimed), num(t, st.ReceiverTotals.TotalSettled), num(t, st.RefundNonce),
			num(t, st.Tokens.Payer), num(t, st.Tokens.Receiver), num(t, st.Tokens.Escrow)}
		if got != w {
			t.Errorf("step %d:\n got %+v\nwant %+v", i, got, w)
		}
		if w.selector != "" && !strings.EqualFold(s.To, escrowAddr) {
			t.Errorf("%s: transaction to %s, want the escrow", s.Name, s.To)
		}
		if w.selector == "" || w.name == "deposit" {
			calls++
			if s.Extra.ChargedAmount != "1000" || s.Extra.ChannelState.ChargedCumulativeAmount != fmt.Sprint(calls*1000) {
				t.Errorf("%s: charged %q, cumulative %q, want 1000 and %d", s.Name, s.Extra.ChargedAmount,
					s.Extra.ChannelState.ChargedCumulativeAmount, calls*1000)
			}
		}
	}
	if steps[0].Amount != "10000" || steps[5].Vouchers != 1 || steps[9].Amount != "3000" {
		t.Errorf("deposit amount %q, claimed vouchers %d, refund amount %q; want 10000, 1, 3000",
			steps[0].Amount, steps[5].Vouchers, steps[9].Amount)
	}
}

// checkChannelSupported starts facilitator.mjs as the other interop tests will, with
// --channels, once with a receiver authorizer key and once without, and reads /supported:
// the batch-settlement kind advertises the authorizer only when it has one.
func checkChannelSupported(t *testing.T, c *chain) {
	t.Helper()
	key := writeKey(t, "facilitator.key", facilitator.key)
	for _, authorizer := range []string{channelAuthorizer.address, ""} {
		flags := []string{"--channels"}
		if authorizer != "" {
			flags = append(flags, "--authorizer-key-file", writeKey(t, "authorizer.key", channelAuthorizer.key))
		}
		res, err := httpClient.Get(startFacilitator(t, c, key, flags...) + "/supported")
		if err != nil {
			t.Fatal(err)
		}
		var supported struct {
			Kinds []struct {
				Scheme, Network string
				Extra           struct{ ReceiverAuthorizer string }
			}
		}
		err = json.NewDecoder(res.Body).Decode(&supported)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, k := range supported.Kinds {
			if k.Scheme == "batch-settlement" && k.Network == "eip155:84532" {
				found = true
				if k.Extra.ReceiverAuthorizer != authorizer {
					t.Errorf("/supported receiverAuthorizer %q, want %q", k.Extra.ReceiverAuthorizer, authorizer)
				}
			}
		}
		if !found {
			t.Errorf("/supported lists no batch-settlement kind on eip155:84532: %+v", supported.Kinds)
		}
	}
}

// checkChannelEvents counts the escrow's events by the spec's topics.
func checkChannelEvents(t *testing.T, c *chain) {
	t.Helper()
	var logs []struct {
		Topics []string `json:"topics"`
	}
	if err := c.call(&logs, "eth_getLogs", map[string]any{"address": escrowAddr, "fromBlock": "0x0", "toBlock": "latest"}); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, l := range logs {
		count[l.Topics[0]]++
	}
	for name, want := range map[string]int{"ChannelCreated": 1, "Deposited": 1, "Claimed": 2, "Settled": 2, "Refunded": 1} {
		if got := count[specTopics[name]]; got != want {
			t.Errorf("%d %s events, want %d", got, name, want)
		}
	}
	if len(logs) != 7 {
		t.Errorf("%d escrow events, want 7", len(logs))
	}
}

// num is a decimal amount the driver printed.
func num(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("not a decimal amount: %q", s)
	}
	return n
}
