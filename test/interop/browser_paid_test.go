package interop

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// TestBrowserPaid pays for runs from the try-it page with a wallet injected into the
// browser, against sandboxd settling on an anvil chain: one run paid and settled, a
// JavaScript run (chosen on the language switch) paid and settled alike, a refused
// signature that sends and charges nothing, and a wallet on another chain that is asked
// to switch.
func TestBrowserPaid(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "onchain", nil)
	svc := startService(t, instance("browser-paid"), true, paymentEnv(env)...)

	t.Run("paid", func(t *testing.T) {
		p := openPage(t, svc.URL, walletScript(t, "0x14a34", false), exposeSigner(t, payer.key))
		before := snapshot(t, c)
		p.typeCode(t, "print(6*7)", "")
		terms := p.askTerms(t)
		for _, want := range []string{"0.005 USDC", usdc, "Base Sepolia (eip155:84532)", payee.address} {
			if !strings.Contains(terms, want) {
				t.Errorf("the terms shown lack %q: %s", want, terms)
			}
		}
		p.phoneShot(t, "terms")
		a := p.pay(t, "paid")
		if a.Stdout != "42\n" || a.Status != "ok" || !strings.Contains(a.Settled, "Paid, settled on chain") {
			t.Fatalf("answer %+v, want 42 and the settlement", a)
		}
		waitFor(5*time.Second, func() bool { return c.balance(t, payee.address) == before.payee+price })
		tx := expectMoved(t, c, before, payer.address)
		if !strings.Contains(a.Settled, tx) || !strings.Contains(a.Settled, "on Base Sepolia") {
			t.Errorf("the page shows %q, want the transaction %s on Base Sepolia", a.Settled, tx)
		}
		href := eval[string](t, p, `document.querySelector("#settle-tx a").href`)
		if href != "https://sepolia.basescan.org/tx/"+tx {
			t.Errorf("explorer link %q", href)
		}
		p.phoneShot(t, "paid")
		p.expectSent(t, 1)
		official := signPayments(t, svc.URL+"/v1/code", "--key-file", writeKey(t, "payer.key", payer.key))[0]
		comparePayloads(t, p.lastPayment(), official.Value)
	})
	t.Run("javascript", func(t *testing.T) {
		p := openPage(t, svc.URL, walletScript(t, "0x14a34", false), exposeSigner(t, payer.key))
		p.waitSwitch(t)
		p.choose(t, "JavaScript")
		before := snapshot(t, c)
		p.askTerms(t)
		a := p.pay(t, "paid-javascript")
		if a.Status != "ok" || !strings.HasPrefix(a.Stdout, "Hello, world!\nNode.js v24.") || !strings.Contains(a.Settled, "Paid, settled on chain") {
			t.Fatalf("answer %+v, want the JavaScript example's output and the settlement", a)
		}
		waitFor(5*time.Second, func() bool { return c.balance(t, payee.address) == before.payee+price })
		expectMoved(t, c, before, payer.address)
		p.expectSent(t, 1)
	})
	t.Run("rejected", func(t *testing.T) {
		p := openPage(t, svc.URL, walletScript(t, "0x14a34", true), exposeSigner(t, payer.key))
		before := snapshot(t, c)
		p.askTerms(t)
		p.do(t, "pressing sign", chromedp.Click(chromedp.ID("pay-wallet")))
		p.do(t, "waiting for the refusal", chromedp.Poll[chromedp.Void](`document.getElementById("wallet-note").textContent.includes("rejected")`))
		p.shot("rejected")
		note := eval[string](t, p, `document.getElementById("wallet-note").textContent`)
		if !strings.Contains(note, "Nothing was signed, nothing was sent") {
			t.Errorf("note %q", note)
		}
		p.expectSent(t, 0)
		expectUnmoved(t, c, before)
	})
	t.Run("cross-origin", func(t *testing.T) { testCrossOrigin(t, svc.URL) })
	t.Run("switch-chain", func(t *testing.T) {
		p := openPage(t, svc.URL, walletScript(t, "0x1", false), exposeSigner(t, payer.key))
		before := snapshot(t, c)
		p.askTerms(t)
		a := p.pay(t, "switched")
		switched := eval[[]map[string]any](t, p, `window.__walletCalls.filter((c) => c.method === "wallet_switchEthereumChain").map((c) => c.params[0])`)
		if len(switched) != 1 || switched[0]["chainId"] != "0x14a34" {
			t.Errorf("switch requests %v, want one to 0x14a34", switched)
		}
		if a.Stdout == "" || a.Status != "ok" {
			t.Fatalf("answer %+v after the switch", a)
		}
		waitFor(5*time.Second, func() bool { return c.balance(t, payee.address) == before.payee+price })
		expectMoved(t, c, before, payer.address)
	})
}

// crossOriginJS is a script of another origin calling the API as a browser x402 client
// does: the unpaid call's terms, then a call carrying PAYMENT-SIGNATURE (preflighted).
const crossOriginJS = `(async (api) => {
  const post = (h) => fetch(api + "/v1/code", { method: "POST", headers: { "Content-Type": "application/json", ...h },
    body: JSON.stringify({ code: "print(1)" }) });
  const unpaid = await post({});
  const bad = await post({ "PAYMENT-SIGNATURE": "bm90IGEgcGF5bWVudA==" });
  return { status: unpaid.status, terms: unpaid.headers.get("PAYMENT-REQUIRED") || "", badStatus: bad.status };
})`

// testCrossOrigin loads a page of another origin and checks that its script reads the
// 402 terms and gets a preflighted PAYMENT-SIGNATURE through (CORS for /v1/*).
func testCrossOrigin(t *testing.T, api string) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<!doctype html><title>portal</title><p>a portal</p>"))
	}))
	defer other.Close()
	p := openBlank(t, other.URL)
	got, err := chromedp.Run(p.ctx, chromedp.Evaluate[map[string]any](crossOriginJS+"("+strconv.Quote(api)+")", chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("the portal's calls: %v", err)
	}
	if got["status"] != float64(402) || got["terms"] == "" || got["badStatus"] != float64(400) {
		t.Errorf("from another origin: %v, want 402 with readable terms, then 400 for a bad payment", got)
	}
}

// lastPayment is the PAYMENT-SIGNATURE of the page's last paid request.
func (p *page) lastPayment() string {
	sent := p.sent()
	for i := len(sent) - 1; i >= 0; i-- {
		if sent[i].paid {
			return sent[i].payment
		}
	}
	return ""
}

// comparePayloads checks that the page builds its PaymentPayload as the official client
// (@x402/core with @x402/evm, through payer.mjs) does for the same terms: the same keys in
// the same order, the same accepted, resource and extensions, and an authorization that
// differs only in its nonce and, by the seconds between the two, its validBefore.
func comparePayloads(t *testing.T, fromPage, official string) {
	t.Helper()
	decode := func(v string) (map[string]any, []string) {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			t.Fatalf("PAYMENT-SIGNATURE %q: %v", v, err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		var order []string
		dec := json.NewDecoder(bytes.NewReader(raw))
		_, _ = dec.Token()
		for dec.More() {
			k, _ := dec.Token()
			order = append(order, k.(string))
			var skip json.RawMessage
			_ = dec.Decode(&skip)
		}
		return m, order
	}
	page, pageKeys := decode(fromPage)
	off, offKeys := decode(official)
	if !slices.Equal(pageKeys, offKeys) {
		t.Errorf("the page's payload has keys %v, the official client's %v", pageKeys, offKeys)
	}
	for _, k := range []string{"x402Version", "accepted", "resource", "extensions"} {
		if !jsonEqual(page[k], off[k]) {
			t.Errorf("%s: the page sends %v, the official client %v", k, page[k], off[k])
		}
	}
	pa := page["payload"].(map[string]any)["authorization"].(map[string]any)
	oa := off["payload"].(map[string]any)["authorization"].(map[string]any)
	for _, k := range []string{"from", "to", "value", "validAfter"} {
		if !strings.EqualFold(fmt.Sprint(pa[k]), fmt.Sprint(oa[k])) {
			t.Errorf("authorization.%s: the page signs %v, the official client %v", k, pa[k], oa[k])
		}
	}
	pb, _ := strconv.ParseInt(fmt.Sprint(pa["validBefore"]), 10, 64)
	ob, _ := strconv.ParseInt(fmt.Sprint(oa["validBefore"]), 10, 64)
	if d := ob - pb; d < 0 || d > 60 {
		t.Errorf("validBefore: the page %d, the official client %d moments later", pb, ob)
	}
}

// askTerms presses Run without paying and waits for the terms; no signature may have
// been asked for yet. It returns the terms as the page shows them.
func (p *page) askTerms(t *testing.T) string {
	t.Helper()
	p.do(t, "pressing Run", chromedp.Click(runButton))
	p.do(t, "waiting for the terms", chromedp.WaitVisible(chromedp.ID("pay-wallet")))
	p.shot("terms")
	signs := eval[int](t, p, `window.__walletCalls.filter((c) => c.method === "eth_signTypedData_v4").length`)
	if signs != 0 {
		t.Errorf("%d signatures asked before the terms were accepted", signs)
	}
	p.expectSent(t, 0)
	return eval[string](t, p, `document.querySelector(".terms").textContent`)
}

// pay presses the sign button and waits for the paid answer.
func (p *page) pay(t *testing.T, state string) answer {
	t.Helper()
	p.do(t, "pressing sign", chromedp.Click(chromedp.ID("pay-wallet")))
	return p.waitAnswer(t, state)
}

// expectSent checks that the page sent n paid requests (to /v1/code or /v1/sessions).
func (p *page) expectSent(t *testing.T, n int) {
	t.Helper()
	paid := 0
	for _, r := range p.sent() {
		if r.paid {
			paid++
		}
	}
	if paid != n {
		t.Errorf("the page sent %d paid requests, want %d: %+v", paid, n, p.sent())
	}
}

// walletScript is browser_wallet.js for the payer on chainID (hex), refusing every
// signature when reject is set.
func walletScript(t *testing.T, chainID string, reject bool) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(interopDir, "browser_wallet.js"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"address": payer.address, "chainId": chainID, "reject": reject})
	return strings.Replace(string(src), "const cfg = WALLET_CONFIG;", "const cfg = "+string(cfg)+";", 1)
}

// exposeSigner gives the page window.sandboxdWalletSign: it signs EIP-712 typed data
// (the JSON of eth_signTypedData_v4) with hexKey, as a wallet does, whatever it holds.
func exposeSigner(t *testing.T, hexKey string) chromedp.Action[chromedp.Void] {
	t.Helper()
	key, err := crypto.HexToECDSA(strings.TrimPrefix(hexKey, "0x"))
	if err != nil {
		t.Fatal(err)
	}
	return chromedp.ExposeFunc("sandboxdWalletSign", func(_ context.Context, typedJSON string) (string, error) {
		var typed apitypes.TypedData
		if err := json.Unmarshal([]byte(typedJSON), &typed); err != nil {
			return "", err
		}
		hash, _, err := apitypes.TypedDataAndHash(typed)
		if err != nil {
			return "", err
		}
		sig, err := crypto.Sign(hash, key)
		if err != nil {
			return "", err
		}
		sig[64] += 27
		return hexutil.Encode(sig), nil
	})
}

// TestBrowserPaidPending: the settlement's receipt does not come back within
// payments.settle_timeout (a stalled RPC node), so the service answers 202
// settlement_pending; the page shows the payment as pending with its transaction, not as
// a failure and not as a request to pay again.
func TestBrowserPaidPending(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "onchain", func(t testing.TB, url string) string {
		return delayProxy(t, url, stallDelay, func(_ string, req, _ []byte) bool {
			return bytes.Contains(req, []byte("eth_getTransactionReceipt"))
		})
	})
	svc := startService(t, instance("browser-pending"), true, append(paymentEnv(env), "SANDBOX_PAYMENTS_SETTLE_TIMEOUT=3s")...)
	p := openPage(t, svc.URL, walletScript(t, "0x14a34", false), exposeSigner(t, payer.key))
	before := snapshot(t, c)
	p.askTerms(t)
	a := p.pay(t, "pending")
	if a.Status != "payment pending" || !strings.Contains(a.Message, "do not pay again") || a.Stdout != "" {
		t.Errorf("answer %+v, want the payment pending and no output", a)
	}
	waitFor(stallDelay+5*time.Second, func() bool { return c.balance(t, payee.address) != before.payee })
	tx := expectMoved(t, c, before, payer.address)
	if !strings.Contains(a.Settled, "Settlement pending:") || !strings.Contains(strings.ToLower(a.Settled), strings.ToLower(tx)) {
		t.Errorf("the page shows %q, want pending with the transaction %s", a.Settled, tx)
	}
	p.phoneShot(t, "pending")
}
