package interop

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// third is anvil's default account 2: one more funded payer, so that each hostile case of a
// test has a channel of its own.
var third = account{"0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a", "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"}

// The selectors of the escrow's calls a payer makes itself (docs/design/channels.md §3).
const (
	initiateWithdrawSelector = "0xcf5cf3dc"
	finalizeWithdrawSelector = "0xe88377b1"
)

// channelWithdrawDelay is the withdrawDelay sandboxd quotes by default, in seconds.
const channelWithdrawDelay = 3600

// The payment-error codes the channel tests expect (x402/channel's, spelled here so that a
// renamed code fails the test).
const (
	codeMismatch           = "invalid_batch_settlement_evm_cumulative_amount_mismatch"
	codeExceedsBalance     = "invalid_batch_settlement_evm_cumulative_exceeds_balance"
	codeSimulationFailed   = "invalid_batch_settlement_evm_deposit_simulation_failed"
	codeInsufficientFunds  = "invalid_batch_settlement_evm_insufficient_balance"
	codeDepositTransaction = "invalid_batch_settlement_evm_deposit_transaction_failed"
)

// startChannelChain starts anvil with the token, Multicall3, the batch-settlement escrow
// stand-in and its collector, each of payers holding 10 USDC.
func startChannelChain(t *testing.T, payers ...account) *chain {
	t.Helper()
	c := startAnvil(t)
	mints := map[string]int64{}
	for _, p := range payers {
		mints[p.address] = 10_000_000
	}
	c.setup(t, mints, "--channels")
	return c
}

// channelEnv is the payment env of a sandboxd selling channels on c, settling in mode:
//   - "onchain": with its relayer, the channels' receiver authorizer;
//   - "delegated": through the official facilitator (started with batch-settlement and an
//     authorizer key), which advertises its authorizer in /supported and signs the claims
//     and refunds sandboxd sends it unsigned;
//   - "keyfile": through the official facilitator started without an authorizer key, sandboxd
//     holding the authorizer key (payments.channels.authorizer_key_file) and signing itself.
//
// Both facilitator modes read the chain at payments.rpc_url. wrap, when non-nil, is put
// between sandboxd and the facilitator (or, onchain, the RPC node), as settlementEnv does.
func channelEnv(t *testing.T, c *chain, mode string, wrap func(testing.TB, string) string) []string {
	t.Helper()
	authorizerKey := writeKey(t, "authorizer.key", channelAuthorizer.key)
	var env []string
	switch mode {
	case "onchain":
		env = settlementEnv(t, c, "onchain", wrap)
	case "delegated":
		env = append(settlementEnv(t, c, "facilitator", wrap, "--channels", "--authorizer-key-file", authorizerKey),
			"SANDBOX_PAYMENTS_RPC_URL="+c.rpc)
	case "keyfile":
		env = append(settlementEnv(t, c, "facilitator", wrap, "--channels"),
			"SANDBOX_PAYMENTS_RPC_URL="+c.rpc, "SANDBOX_PAYMENTS_CHANNELS_AUTHORIZER_KEY_FILE="+authorizerKey)
	default:
		t.Fatalf("no channel mode %q", mode)
	}
	return paymentEnv(env)
}

// runsOf is how many programs svc ran: the sum of its sandboxd_runs_total.
func runsOf(t *testing.T, svc *service) int {
	t.Helper()
	total := 0
	for _, line := range strings.Split(svc.metrics(t), "\n") {
		if !strings.HasPrefix(line, "sandboxd_runs_total{") {
			continue
		}
		n, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q", line)
		}
		total += int(n)
	}
	return total
}

// paymentRequired is a decoded PAYMENT-REQUIRED: its error (a corrective 402's bare code) and
// its batch-settlement entry's channel state.
type paymentRequired struct {
	Error   string `json:"error"`
	Accepts []struct {
		Scheme string `json:"scheme"`
		Extra  struct {
			ChannelState *struct {
				ChargedCumulativeAmount string `json:"chargedCumulativeAmount"`
			} `json:"channelState"`
			VoucherState *struct {
				SignedMaxClaimable string `json:"signedMaxClaimable"`
			} `json:"voucherState"`
		} `json:"extra"`
	} `json:"accepts"`
}

// corrective is the charged total a corrective 402's batch entry states, "" when it states none.
func (p paymentRequired) corrective() string {
	for _, a := range p.Accepts {
		if a.Scheme == "batch-settlement" && a.Extra.ChannelState != nil && a.Extra.VoucherState != nil {
			return a.Extra.ChannelState.ChargedCumulativeAmount
		}
	}
	return ""
}

// requiredOf decodes the PAYMENT-REQUIRED header of an answer.
func requiredOf(t *testing.T, h http.Header) paymentRequired {
	t.Helper()
	var pr paymentRequired
	headerJSON(t, h, "PAYMENT-REQUIRED", &pr)
	return pr
}

// resend posts code to url with a PAYMENT-SIGNATURE sent before, byte for byte, and
// checks that nothing ran for it (a replay's answer is the stored one; anything else has
// no output); it returns the status and headers of the answer.
func resend(t *testing.T, svc *service, url, header, code string) (int, http.Header) {
	t.Helper()
	if header == "" {
		t.Fatal("no payment header to send again")
	}
	runs := runsOf(t, svc)
	status, body, h := paidPost(t, url, signed{Name: "PAYMENT-SIGNATURE", Value: header}, code, 60*time.Second)
	replayed := h.Get("Idempotent-Replayed") == "true"
	if (body.Stdout != nil && !replayed) || runsOf(t, svc) != runs {
		t.Errorf("a payment sent again got a run: status %d %s", status, body)
	}
	return status, h
}

// configWords is the ABI encoding (hex, no 0x) of the channel config the official client
// builds for payer: its own payer authorizer, the token, salt zero.
func configWords(payer, receiver, receiverAuthorizer string, delay int64) string {
	var b strings.Builder
	for _, a := range []string{payer, payer, receiver, receiverAuthorizer, usdc} {
		b.WriteString(pad32(a))
	}
	return b.String() + word(delay) + strings.Repeat("0", 64)
}
