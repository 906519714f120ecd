package interop

import "testing"

// startMode starts a chain (anvil, the payer funded) and returns it with the settlement
// env of mode on it (see settlementEnv).
func startMode(t *testing.T, mode string, wrap func(testing.TB, string) string) (*chain, []string) {
	t.Helper()
	c := startAnvil(t)
	c.setup(t, map[string]int64{payer.address: 10_000_000})
	return c, settlementEnv(t, c, mode, wrap)
}

// settlementEnv configures a sandboxd for mode ("onchain" or "facilitator") on c,
// starting the official facilitator for the facilitator mode, with flags passed on to it.
// wrap, when non-nil, is put between sandboxd and the endpoint it talks to (the RPC node,
// or the facilitator) and returns its URL.
func settlementEnv(t *testing.T, c *chain, mode string, wrap func(testing.TB, string) string, flags ...string) []string {
	t.Helper()
	if wrap == nil {
		wrap = func(_ testing.TB, url string) string { return url }
	}
	if mode == "onchain" {
		return []string{
			"SANDBOX_PAYMENTS_SETTLEMENT=onchain",
			"SANDBOX_PAYMENTS_RPC_URL=" + wrap(t, c.rpc),
			"SANDBOX_PAYMENTS_RELAYER_KEY_FILE=" + writeKey(t, "relayer.key", relayer.key),
		}
	}
	url := startFacilitator(t, c, writeKey(t, "facilitator.key", facilitator.key), flags...)
	return []string{
		"SANDBOX_PAYMENTS_SETTLEMENT=facilitator",
		"SANDBOX_PAYMENTS_FACILITATOR_URL=" + wrap(t, url),
	}
}
