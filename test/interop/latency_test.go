package interop

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestPaidLatency measures what paying adds to a call: the median over n calls of a
// free service and of a paid one settling on anvil (onchain mode), both on the same
// Docker engine, alternated. The paid figure is the official client's whole exchange:
// the 402, signing, the paid retry with verification and settlement. It is a
// measurement, not a check: it runs only with SANDBOXD_INTEROP_LATENCY=1
// (test/scripts/latency.sh paid), n from SANDBOXD_LATENCY_N (default 50).
func TestPaidLatency(t *testing.T) {
	if os.Getenv("SANDBOXD_INTEROP_LATENCY") != "1" {
		t.Skip("set SANDBOXD_INTEROP_LATENCY=1 (test/scripts/latency.sh paid) to measure")
	}
	mustInterop(t)
	n := 50
	if v, err := strconv.Atoi(os.Getenv("SANDBOXD_LATENCY_N")); err == nil && v > 0 {
		n = v
	}
	c := startAnvil(t)
	c.setup(t, map[string]int64{payer.address: int64(n+10) * price})
	paid := startService(t, instance("latency-paid"), true, paymentEnv(settlementEnv(t, c, "onchain", nil))...)
	free := startService(t, instance("latency-free"), true, "SANDBOX_PAYMENTS_ENABLED=false")
	var r struct {
		N             int     `json:"n"`
		FreeMedianMs  float64 `json:"freeMedianMs"`
		PaidMedianMs  float64 `json:"paidMedianMs"`
		AddedMedianMs float64 `json:"addedMedianMs"`
		QuoteMs       float64 `json:"quoteMedianMs"`
		RetryMs       float64 `json:"paidRetryMedianMs"`
		Error         string  `json:"error"`
	}
	runNode(t, time.Duration(n)*4*time.Second+time.Minute, &r, "client.mjs", "latency",
		"--url", paid.URL+"/v1/code", "--free-url", free.URL+"/v1/code",
		"--key-file", writeKey(t, "payer.key", payer.key), "--n", strconv.Itoa(n))
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	if got, want := c.balance(t, payee.address), int64(n)*price; got != want {
		t.Errorf("payee holds %d after %d paid calls, want %d", got, n, want)
	}
	fmt.Printf("paid-latency: n=%d free median %.1f ms, paid median %.1f ms (onchain, anvil): paying adds %.1f ms\n",
		r.N, r.FreeMedianMs, r.PaidMedianMs, r.AddedMedianMs)
	fmt.Printf("paid-latency: of the paid call, the unpaid request answered 402 in %.1f ms and the paid retry took %.1f ms (medians)\n",
		r.QuoteMs, r.RetryMs)
}

// TestMCPLatency measures what MCP adds to a call: the median over n calls of a plain
// POST /v1/code and of a run_python tools/call by the official MCP client on a
// connection it keeps, alternated and spaced so the warm pool refills between calls,
// against one free service. It is a measurement, not a
// check: it runs only with SANDBOXD_INTEROP_LATENCY=1 (test/scripts/latency.sh mcp), n from
// SANDBOXD_LATENCY_N (default 50).
func TestMCPLatency(t *testing.T) {
	if os.Getenv("SANDBOXD_INTEROP_LATENCY") != "1" {
		t.Skip("set SANDBOXD_INTEROP_LATENCY=1 (test/scripts/latency.sh mcp) to measure")
	}
	mustInterop(t)
	n := 50
	if v, err := strconv.Atoi(os.Getenv("SANDBOXD_LATENCY_N")); err == nil && v > 0 {
		n = v
	}
	svc := startService(t, instance("latency-mcp"), true)
	var r struct {
		N             int     `json:"n"`
		HTTPMedianMs  float64 `json:"httpMedianMs"`
		MCPMedianMs   float64 `json:"mcpMedianMs"`
		AddedMedianMs float64 `json:"addedMedianMs"`
		Error         string  `json:"error"`
	}
	runNode(t, time.Duration(n)*4*time.Second+time.Minute, &r, "mcp.mjs", "latency",
		"--url", svc.URL+"/mcp", "--http-url", svc.URL+"/v1/code", "--n", strconv.Itoa(n))
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	fmt.Printf("mcp-latency: n=%d plain HTTP median %.1f ms, MCP tools/call median %.1f ms: MCP adds %.1f ms\n",
		r.N, r.HTTPMedianMs, r.MCPMedianMs, r.AddedMedianMs)
}
