package interop

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// dataPrice is the data environment's price in the paid test, $0.01: twice the default,
// so that a quote of the wrong environment's price shows.
const (
	dataPrice       = "0.01"
	dataPriceAtomic = 10_000
)

// writeArguments writes run_python's arguments for mcp.mjs --arguments.
func writeArguments(t testing.TB, args map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "arguments.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkDataTools checks that the tool the official client listed takes environment and
// files and says that its answer carries files.
func checkDataTools(t *testing.T, tools []mcpTool) {
	t.Helper()
	checkTools(t, tools)
	in, _ := runPython(tools).InputSchema["properties"].(map[string]any)
	out, _ := json.Marshal(runPython(tools).OutputSchema)
	if in["environment"] == nil || in["files"] == nil || !strings.Contains(string(out), `"files_truncated"`) {
		t.Errorf("run_python's schemas lack the data fields: input properties %v, output %s", in, out)
	}
}

// checkChartMCP checks run_python's result for the chart example: the run in
// structuredContent as over HTTP, a text block first, and each PNG among the files out
// also an image content block, base64 of the same bytes, mimeType image/png.
func checkChartMCP(t *testing.T, r mcpResult) {
	t.Helper()
	if r.Thrown != "" || r.IsError {
		t.Fatalf("call: thrown %q, isError %v, content %.500v", r.Thrown, r.IsError, r.Content)
	}
	files := checkChartAnswer(t, asDataAnswer(t, r.StructuredContent))
	if len(r.Content) == 0 || r.Content[0].Type != "text" || !strings.Contains(r.Content[0].Text, "status ok") {
		t.Errorf("content[0] %.300v, want the run's text", r.Content)
	}
	var images []string
	for i, c := range r.Content {
		if c.Type != "image" {
			continue
		}
		if c.MimeType != "image/png" {
			t.Errorf("content[%d]: mimeType %q, want image/png", i, c.MimeType)
		}
		decodePNG(t, fmt.Sprintf("content[%d]", i), c.Data)
		images = append(images, c.Data)
	}
	var want []string
	for _, name := range chartFiles {
		want = append(want, files[name])
	}
	slices.Sort(images)
	slices.Sort(want)
	if !slices.Equal(images, want) {
		t.Errorf("%d image blocks; want one per PNG among the files out (%q), of the same bytes", len(images), chartFiles)
	}
}

// TestMCPDataChart: the official MCP client, in free mode, calls run_python in the data
// environment with a CSV file in and a program that draws two charts with pandas and
// matplotlib (one saved with plt.savefig, one left to plt.show()); it receives both as
// image content blocks that decode as PNGs, and the run with its files in
// structuredContent.
func TestMCPDataChart(t *testing.T) {
	mustInterop(t)
	svc := startService(t, instance("mcp-data"), true)
	waitWarm(t, svc)
	out := runMCP(t, "call", svc.URL+"/mcp", "--arguments", writeArguments(t, chartArguments(t)))
	checkDataTools(t, out.Tools)
	checkChartMCP(t, out.Result)
}

// TestMCPDataChartPaid: paid on anvil, the data environment priced at twice the
// default. Over HTTP the 402 of a data request quotes data's price and that of a default
// one the default price; over MCP the official client's unpaid call of the chart gets
// terms for data's price, pays them with the official x402 client, and gets the charts
// as image blocks with the settlement; exactly data's price moves, once.
func TestMCPDataChartPaid(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "onchain", nil)
	svc := startService(t, instance("mcp-data-paid"), true,
		append(paymentEnv(env), "SANDBOX_ENVIRONMENTS_DATA_PRICE="+dataPrice)...)
	if got := quotedAmount(t, svc.URL+"/v1/code", chartArguments(t)); got != fmt.Sprint(dataPriceAtomic) {
		t.Errorf("the 402 of a data request quotes %s, want data's price %d", got, dataPriceAtomic)
	}
	if got := quotedAmount(t, svc.URL+"/v1/code", map[string]any{"code": "print(1)"}); got != fmt.Sprint(price) {
		t.Errorf("the 402 of a default request quotes %s, want the default price %d", got, price)
	}

	before := snapshot(t, c)
	waitWarm(t, svc)
	out := runMCP(t, "pay", svc.URL+"/mcp", "--key-file", writeKey(t, "payer.key", payer.key),
		"--arguments", writeArguments(t, chartArguments(t)))
	checkDataTools(t, out.Tools)
	unpaid := out.Unpaid
	if unpaid.Thrown != "" || !unpaid.IsError {
		t.Fatalf("unpaid call: thrown %q, isError %v; want the terms as a tool error", unpaid.Thrown, unpaid.IsError)
	}
	if got := termsAmount(t, unpaid.StructuredContent); got != fmt.Sprint(dataPriceAtomic) {
		t.Errorf("the MCP terms of a data call quote %s, want data's price %d", got, dataPriceAtomic)
	}
	checkChartMCP(t, out.Paid)
	var settled settleResponse
	raw, _ := json.Marshal(out.Paid.Meta["x402/payment-response"])
	if json.Unmarshal(raw, &settled) != nil || !settled.Success || !txHash.MatchString(settled.Transaction) {
		t.Fatalf(`_meta["x402/payment-response"] = %s`, raw)
	}
	waitFor(5*time.Second, func() bool { return c.balance(t, payee.address) != before.payee })
	if hash := expectMovedAmount(t, c, before, payer.address, dataPriceAtomic); !strings.EqualFold(hash, settled.Transaction) {
		t.Errorf("the transfer is in %s, the settlement names %s", hash, settled.Transaction)
	}
	checkMCPReplayed(t, out.Paid, out.Replay)
}

// quotedAmount posts body unpaid with curl and returns the amount of the first
// requirement of the 402's PAYMENT-REQUIRED header.
func quotedAmount(t *testing.T, url string, body map[string]any) string {
	t.Helper()
	r := curlJSON(t, url, body)
	if r.Status != http.StatusPaymentRequired {
		t.Fatalf("unpaid call: status %d, want 402: %.300s", r.Status, r.Body)
	}
	raw, err := base64.StdEncoding.DecodeString(r.Header.Get("PAYMENT-REQUIRED"))
	if err != nil {
		t.Fatalf("PAYMENT-REQUIRED is not base64: %v", err)
	}
	var terms map[string]any
	if err := json.Unmarshal(raw, &terms); err != nil {
		t.Fatalf("PAYMENT-REQUIRED is not JSON: %v", err)
	}
	return termsAmount(t, terms)
}

// termsAmount is the amount of the first requirement of x402 v2 terms.
func termsAmount(t *testing.T, terms map[string]any) string {
	t.Helper()
	accepts, _ := terms["accepts"].([]any)
	if len(accepts) == 0 {
		t.Fatalf("terms without requirements: %v", terms)
	}
	first, _ := accepts[0].(map[string]any)
	return fmt.Sprint(first["amount"])
}
