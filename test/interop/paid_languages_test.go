package interop

import "testing"

// TestPaidJavaScript: in paid mode on anvil (the service settling on chain), the official
// x402 client (@x402/fetch with @x402/evm's exact scheme) pays for a JavaScript program
// as for a Python one: the 402's terms signed, the paid retry answered 200 with the run,
// in node as javascript, and settled by the one transfer of the price (paidRunOf).
func TestPaidJavaScript(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "onchain", nil)
	svc := startService(t, instance("paid-js"), true, paymentEnv(env)...)
	body := `{"language":"js","code":"console.log([6, 7].reduce((a, b) => a * b))"}`
	paidRunOf(t, c, svc.URL+"/v1/code", writeKey(t, "payer.key", payer.key), runAnswer{"stdout 42 from javascript in node",
		func(b runBody) bool {
			return b.Stdout != nil && *b.Stdout == "42\n" && b.Lang == "javascript" && b.Environment == "node"
		}}, "--body", body)
}
