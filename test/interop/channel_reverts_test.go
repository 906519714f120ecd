package interop

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// revertCase is one eth_call the escrow or its collector must refuse with a spec error.
type revertCase struct {
	name, from, to, data, want string
}

// checkChannelReverts makes calls that must fail, each with the custom error the official
// contracts use (selectors from docs/design/channels.md §3), and one sweep that must do
// nothing quietly, on the channel the proof left behind (everything claimed and swept).
func checkChannelReverts(t *testing.T, c *chain, out channelProof) {
	t.Helper()
	// The official client's config: the payer its own authorizer, the token, salt zero.
	config := func(delay int) string {
		return configWords(fmt.Sprint(out.Config["payer"]), fmt.Sprint(out.Config["receiver"]),
			fmt.Sprint(out.Config["receiverAuthorizer"]), int64(delay))
	}
	// deposit(config, amount, collector, collectorData "") and refundWithSignature(config,
	// amount, nonce, signature "") put their bytes after the 7 config words and 3 more.
	deposit := func(delay int, amount int64) string {
		return "0x140f1e75" + config(delay) + word(amount) + pad32(collectorAddr) + word(10*32) + word(0)
	}
	cases := []revertCase{
		{"deposit of zero", payer.address, escrowAddr, deposit(900, 0), "0x56316e87"},                    // ZeroDeposit
		{"deposit, delay under 900 s", payer.address, escrowAddr, deposit(899, 1000), "0x4574fab6"},      // WithdrawDelayOutOfRange
		{"claim of no rows", payee.address, escrowAddr, "0x29237b0c" + word(32) + word(0), "0xc2e5347d"}, // EmptyBatch
		{"claimWithSignature of no rows", payee.address, escrowAddr,
			"0xe43ce1f2" + word(64) + word(96) + word(0) + word(0), "0xc2e5347d"}, // EmptyBatch
		{"refundWithSignature, stale nonce", payee.address, escrowAddr,
			"0xb77433e9" + config(900) + word(1000) + word(0) + word(10*32) + word(0), "0x164f1afe"}, // InvalidRefundNonce
		{"refund by a stranger", unfunded.address, escrowAddr, "0xdce4bfae" + config(900) + word(1000), "0x7864f008"},                 // NotAuthorizedToRefund
		{"initiateWithdraw by a stranger", unfunded.address, escrowAddr, "0xcf5cf3dc" + config(900) + word(1), "0xea3a9a39"},          // InvalidChannel
		{"initiateWithdraw of more than is unclaimed", payer.address, escrowAddr, "0xcf5cf3dc" + config(900) + word(1), "0x6d3d5764"}, // WithdrawAmountExceedsAvailable
		{"finalizeWithdraw with none pending", payer.address, escrowAddr, "0xe88377b1" + config(900), "0x3a0a1ca6"},                   // WithdrawalNotPending
		{"collect by anyone but the escrow", payer.address, collectorAddr,
			"0xe416d8d3" + pad32(payer.address) + pad32(usdc) + word(1000) + strings.Repeat("0", 64) + word(5*32) + word(0), "0x9794beb9"}, // OnlyX402BatchSettlement
		{"settle with nothing owed", payer.address, escrowAddr, "0x9db32a8f" + pad32(payee.address) + pad32(usdc), ""},
	}
	for _, rc := range cases {
		if got := c.revertData(t, rc.from, rc.to, rc.data); got != rc.want {
			t.Errorf("%s: reverted with %q, want %q", rc.name, got, rc.want)
		}
	}
}

// word is n as one 32-byte ABI word in hex, without 0x.
func word(n int64) string {
	return fmt.Sprintf("%064x", n)
}

// revertData makes an eth_call from `from` and returns its revert data, "" when it succeeded.
func (c *chain) revertData(t testing.TB, from, to, data string) string {
	t.Helper()
	var ret string
	err := c.call(&ret, "eth_call", map[string]string{"from": from, "to": to, "data": data}, "latest")
	var re *rpcError
	switch {
	case err == nil:
		return ""
	case !errors.As(err, &re):
		t.Fatal(err)
	case re.Data == "":
		return "no data: " + re.Message
	}
	return re.Data
}
