package interop

import "testing"

// startMode starts a chain (anvil, the payer funded) and, in facilitator mode, the
// official facilitator on it; it returns the chain and the settlement env of mode
// ("onchain" or "facilitator") for a sandboxd. wrap, when non-nil, is put between sandboxd
// and the endpoint it talks to (the RPC node, or the facilitator) and returns its URL.
func startMode(t *testing.T, mode string, wrap func(testing.TB, string) string) (*chain, []string) {
	t.Helper()
	if wrap == nil {
		wrap = func(_ testing.TB, url string) string { return url }
	}
	c := startAnvil(t)
	c.setup(t, map[string]int64{payer.address: 10_000_000})
	if mode == "onchain" {
		return c, []string{
			"SANDBOX_PAYMENTS_SETTLEMENT=onchain",
			"SANDBOX_PAYMENTS_RPC_URL=" + wrap(t, c.rpc),
			"SANDBOX_PAYMENTS_RELAYER_KEY_FILE=" + writeKey(t, "relayer.key", relayer.key),
		}
	}
	url := startFacilitator(t, c, writeKey(t, "facilitator.key", facilitator.key))
	return c, []string{
		"SANDBOX_PAYMENTS_SETTLEMENT=facilitator",
		"SANDBOX_PAYMENTS_FACILITATOR_URL=" + wrap(t, url),
	}
}
