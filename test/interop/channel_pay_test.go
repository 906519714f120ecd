package interop

import (
	"context"
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	escrow "sandboxd/payments/chain"
	"sandboxd/x402"
)

// batchResult is what test/interop/batch.mjs prints.
type batchResult struct {
	OK      bool        `json:"ok"`
	Payer   string      `json:"payer"`
	Results []batchStep `json:"results"`
}

// batchStep is one call of batch.mjs: its answer, the settlement the official client read,
// the terms of a 402 (Required) and the payment header it sent last (Sent).
type batchStep struct {
	Status     int                `json:"status"`
	Body       answerBody         `json:"body"`
	Error      string             `json:"error"`
	MS         float64            `json:"ms"`
	Refund     bool               `json:"refund"`
	OK         bool               `json:"ok"`
	Required   *paymentRequired   `json:"required"`
	Sent       string             `json:"sent"`
	Settlement *channelSettlement `json:"settlement"`
}

// answerBody is an answer's JSON body as it came, shown as text in failure messages.
type answerBody []byte

// UnmarshalJSON keeps the body as it came.
func (b *answerBody) UnmarshalJSON(raw []byte) error {
	*b = append((*b)[:0], raw...)
	return nil
}

// String is the body's JSON.
func (b answerBody) String() string { return string(b) }

// channelSettlement is the settle report of a channel payment (PAYMENT-RESPONSE, or MCP's
// _meta["x402/payment-response"]): a deposit's transaction and amount, what the call was
// charged and the channel's state after it.
type channelSettlement struct {
	Success     bool   `json:"success"`
	Transaction string `json:"transaction"`
	Amount      string `json:"amount"`
	ErrorReason string `json:"errorReason"`
	Extra       struct {
		ChargedAmount string `json:"chargedAmount"`
		ChannelState  struct {
			ChannelID               string `json:"channelId"`
			Balance                 string `json:"balance"`
			ChargedCumulativeAmount string `json:"chargedCumulativeAmount"`
		} `json:"channelState"`
	} `json:"extra"`
}

// batchCall is one step for batch.mjs; VoucherOnly pays with a voucher even past the
// channel's balance.
type batchCall struct {
	URL         string         `json:"url,omitempty"`
	Method      string         `json:"method,omitempty"`
	Body        map[string]any `json:"body,omitempty"`
	Refund      string         `json:"refund,omitempty"`
	VoucherOnly bool           `json:"voucherOnly,omitempty"`
}

// payByChannel runs steps through the official batch-settlement client with the key in keyFile.
func payByChannel(t *testing.T, c *chain, keyFile string, parallel int, steps ...batchCall) batchResult {
	t.Helper()
	raw, _ := json.Marshal(steps)
	var out batchResult
	runNode(t, 4*time.Minute, &out, "batch.mjs", "--rpc", c.rpc, "--key-file", keyFile, "--steps", string(raw),
		"--parallel", strconv.Itoa(parallel))
	if !out.OK || len(out.Results) != len(steps) {
		t.Fatalf("batch.mjs: %+v", out)
	}
	return out
}

// codeCall is a paid POST /v1/code of src at base.
func codeCall(base, src string) batchCall {
	return batchCall{URL: base + "/v1/code", Method: "POST", Body: map[string]any{"language": "python", "code": src}}
}

// escrowState reads a channel's escrow state from c.
func escrowState(t *testing.T, c *chain, id string) escrow.ChannelState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := escrow.DialReader(ctx, x402.Requirements{Network: "eip155:84532", Asset: usdc},
		escrow.Config{Endpoint: c.rpc, CheckTimeout: 10 * time.Second, SettleTimeout: 10 * time.Second, RPCTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	states, err := r.ReadChannels(ctx, []common.Hash{common.HexToHash(id)})
	if err != nil {
		t.Fatal(err)
	}
	return states[0]
}

// claimPromptly has the claimer claim as soon as one call's price is unclaimed (its tick
// is a second): a pass that claimed part of the calls is followed by another for the rest.
var claimPromptly = []string{"SANDBOX_PAYMENTS_CHANNELS_CLAIM_THRESHOLD=0.005", "SANDBOX_PAYMENTS_CHANNELS_MIRROR_EVERY=2s"}

// TestChannelPaysOnchain: the official batch-settlement client pays sandboxd (settling on
// chain with its relayer, the channel's receiver authorizer); see checkChannelPays.
func TestChannelPaysOnchain(t *testing.T) {
	mustInterop(t)
	c := startChannelChain(t, payer)
	svc := startService(t, instance("channel-onchain"), true, append(channelEnv(t, c, "onchain", nil), claimPromptly...)...)
	checkChannelPays(t, c, svc)
}

// checkChannelPays has the official client pay svc a deposit and then vouchers: every answer
// is delivered with the channel's state, the claimer claims what was charged (svc claims
// promptly) and sweeps it to payTo, and the client's refund gets the rest back. The
// chain's totalClaimed, payTo's gain and the payer's loss are each what the client was charged.
func checkChannelPays(t *testing.T, c *chain, svc *service) {
	t.Helper()
	key := writeKey(t, "payer.key", payer.key)
	var steps []batchCall
	for i := 0; i < 5; i++ {
		steps = append(steps, codeCall(svc.URL, "print(6*7)"))
	}
	out := payByChannel(t, c, key, 1, steps...)
	id, charged := checkCharged(t, out.Results, 0)
	t.Logf("deposit %.0f ms, vouchers %.0f %.0f %.0f %.0f ms", out.Results[0].MS, out.Results[1].MS,
		out.Results[2].MS, out.Results[3].MS, out.Results[4].MS)
	st := escrowState(t, c, id)
	if st.Balance.Cmp(big.NewInt(50_000)) != 0 {
		t.Fatalf("escrow balance %s, want the deposit 50000 (10 prices)", st.Balance)
	}
	waitClaimed(t, c, id, charged)
	waitFor(30*time.Second, func() bool { return c.balance(t, payee.address) == charged })
	if got := c.balance(t, payee.address); got != charged {
		t.Fatalf("payTo holds %d, want the %d charged, swept", got, charged)
	}
	refund := payByChannel(t, c, key, 1, batchCall{Refund: svc.URL + "/v1/channel"})
	if r := refund.Results[0]; !r.OK {
		t.Fatalf("refund: %+v", r)
	}
	if got := c.balance(t, payer.address); got != 10_000_000-charged {
		t.Fatalf("payer holds %d after the refund, want %d: it lost what it was charged", got, 10_000_000-charged)
	}
}

// checkCharged checks calls paid through one channel, each a delivered print(6*7) charged
// the price with the running total the client saw rising by it from before (only the first,
// a deposit, has a transaction); it returns the channel and what the calls were charged, the
// sum of the chargedAmount the client read.
func checkCharged(t *testing.T, calls []batchStep, before int64) (string, int64) {
	t.Helper()
	settled := make([]*channelSettlement, len(calls))
	for i, r := range calls {
		if r.Status != 200 || !strings.Contains(string(r.Body), `"stdout":"42\n"`) {
			t.Fatalf("call %d: %+v body %s", i, r, r.Body)
		}
		settled[i] = r.Settlement
	}
	return checkSettled(t, settled, before)
}

// checkSettled checks the settle reports of calls charged in turn on one channel, as
// checkCharged does.
func checkSettled(t *testing.T, settled []*channelSettlement, before int64) (string, int64) {
	t.Helper()
	id, sum := "", int64(0)
	for i, s := range settled {
		if s == nil || !s.Success {
			t.Fatalf("call %d: settlement %+v", i, s)
		}
		cs := s.Extra.ChannelState
		sum += num(t, s.Extra.ChargedAmount)
		if s.Extra.ChargedAmount != strconv.Itoa(price) || cs.ChargedCumulativeAmount != strconv.FormatInt(before+sum, 10) {
			t.Fatalf("call %d charged %s, in all %s; want %d and %d", i, s.Extra.ChargedAmount,
				cs.ChargedCumulativeAmount, price, before+sum)
		}
		if (i == 0 && before == 0) != (s.Transaction != "") {
			t.Fatalf("call %d: transaction %q (only the deposit has one)", i, s.Transaction)
		}
		id = cs.ChannelID
	}
	return id, sum
}

// waitClaimed waits up to 30 s for the escrow to show channel id claimed to want, and fails
// the test when it does not.
func waitClaimed(t *testing.T, c *chain, id string, want int64) {
	t.Helper()
	waitFor(30*time.Second, func() bool { return escrowState(t, c, id).TotalClaimed.Cmp(big.NewInt(want)) == 0 })
	if got := escrowState(t, c, id).TotalClaimed; got.Cmp(big.NewInt(want)) != 0 {
		t.Fatalf("claimed %s on chain, want %d", got, want)
	}
}
