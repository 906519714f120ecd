package chain

import "testing"

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://user:pw@base-sepolia.g.alchemy.com/v2/KEY?x=1#f": "https://base-sepolia.g.alchemy.com",
		"wss://node.example:8546/ws/KEY":                          "wss://node.example:8546",
		"/var/run/geth.ipc":                                       "the configured RPC",
		"::not a url":                                             "the configured RPC",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
