package interop

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsChannelPays runs the JavaScript of docs/payments.md's "Channels", as written but
// for the URL, against a service offering channels on a local chain: the official
// batch-settlement client deposits and gets 42, and the escrow holds its deposit.
func TestDocsChannelPays(t *testing.T) {
	mustInterop(t)
	c := startAnvil(t)
	c.setup(t, map[string]int64{payer.address: 10_000_000}, "--channels")
	svc := startService(t, instance("docs-channel"), true, paymentEnv(settlementEnv(t, c, "onchain", nil))...)
	section := pageSection(t, filepath.Join("docs", "payments.md"), "## Channels")
	js := fencedBlock(t, section, "```js")
	out := runSnippet(t, strings.Replace(js, docsPaidURL, svc.URL+"/v1/code", 1), "RPC_URL="+c.rpc)
	var got struct {
		Status int            `json:"status"`
		Paid   bool           `json:"paid"`
		Answer map[string]any `json:"answer"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("the snippet printed %q: %v", out, err)
	}
	if got.Status != 200 || !got.Paid || got.Answer["stdout"] != "42\n" {
		t.Fatalf("the snippet's call: %+v; want 200, a PAYMENT-RESPONSE and 42", got)
	}
	if escrowBalance := c.balance(t, escrowAddr); escrowBalance != 10*price {
		t.Fatalf("the escrow holds %d, want the deposit of 10 prices (%d)", escrowBalance, 10*price)
	}
}
