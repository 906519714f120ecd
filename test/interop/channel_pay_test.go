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

// batchStep is one call of batch.mjs: its answer and the settlement the official client read.
type batchStep struct {
	Status     int             `json:"status"`
	Body       json.RawMessage `json:"body"`
	Error      string          `json:"error"`
	MS         float64         `json:"ms"`
	Refund     bool            `json:"refund"`
	OK         bool            `json:"ok"`
	Settlement *struct {
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
	} `json:"settlement"`
}

// batchCall is one step for batch.mjs.
type batchCall struct {
	URL    string         `json:"url,omitempty"`
	Method string         `json:"method,omitempty"`
	Body   map[string]any `json:"body,omitempty"`
	Refund string         `json:"refund,omitempty"`
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

// TestChannelPaysOnchain: the official batch-settlement client pays sandboxd (settling on
// chain with its relayer, the channel's receiver authorizer) a deposit and then vouchers;
// every answer is delivered with the channel's state, the claimer claims what was charged
// and sweeps it to payTo, and the client's refund gets the rest back.
func TestChannelPaysOnchain(t *testing.T) {
	mustInterop(t)
	c := startAnvil(t)
	c.setup(t, map[string]int64{payer.address: 10_000_000}, "--channels")
	env := append(paymentEnv(settlementEnv(t, c, "onchain", nil)),
		"SANDBOX_PAYMENTS_CHANNELS_CLAIM_THRESHOLD=0.025", "SANDBOX_PAYMENTS_CHANNELS_MIRROR_EVERY=2s")
	svc := startService(t, instance("channel-onchain"), true, env...)
	key := writeKey(t, "payer.key", payer.key)
	var steps []batchCall
	for i := 0; i < 5; i++ {
		steps = append(steps, codeCall(svc.URL, "print(6*7)"))
	}
	out := payByChannel(t, c, key, 1, steps...)
	id := ""
	for i, r := range out.Results {
		if r.Status != 200 || r.Settlement == nil || !r.Settlement.Success || !strings.Contains(string(r.Body), `"stdout":"42\n"`) {
			t.Fatalf("call %d: %+v body %s", i, r, r.Body)
		}
		cs := r.Settlement.Extra.ChannelState
		if r.Settlement.Extra.ChargedAmount != strconv.Itoa(price) || cs.ChargedCumulativeAmount != strconv.Itoa((i+1)*price) {
			t.Fatalf("call %d charged %s, in all %s; want %d and %d", i, r.Settlement.Extra.ChargedAmount,
				cs.ChargedCumulativeAmount, price, (i+1)*price)
		}
		if (i == 0) != (r.Settlement.Transaction != "") {
			t.Fatalf("call %d: transaction %q (only the deposit has one)", i, r.Settlement.Transaction)
		}
		id = cs.ChannelID
	}
	t.Logf("deposit %.0f ms, vouchers %.0f %.0f %.0f %.0f ms", out.Results[0].MS, out.Results[1].MS,
		out.Results[2].MS, out.Results[3].MS, out.Results[4].MS)
	st := escrowState(t, c, id)
	if st.Balance.Cmp(big.NewInt(50_000)) != 0 {
		t.Fatalf("escrow balance %s, want the deposit 50000 (10 prices)", st.Balance)
	}
	// 25000 charged reaches the threshold: the claimer claims it at once.
	waitFor(30*time.Second, func() bool { return escrowState(t, c, id).TotalClaimed.Cmp(big.NewInt(5*price)) == 0 })
	if got := escrowState(t, c, id).TotalClaimed; got.Cmp(big.NewInt(5*price)) != 0 {
		t.Fatalf("claimed %s on chain, want %d", got, 5*price)
	}
	waitFor(30*time.Second, func() bool { return c.balance(t, payee.address) == 5*price })
	if got := c.balance(t, payee.address); got != 5*price {
		t.Fatalf("payTo holds %d, want %d swept", got, 5*price)
	}
	refund := payByChannel(t, c, key, 1, batchCall{Refund: svc.URL + "/v1/channel"})
	if r := refund.Results[0]; !r.OK {
		t.Fatalf("refund: %+v", r)
	}
	if got := c.balance(t, payer.address); got != 10_000_000-5*price {
		t.Fatalf("payer holds %d after the refund, want %d", got, 10_000_000-5*price)
	}
}
