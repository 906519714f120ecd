package chain

import (
	"context"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
)

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

// TestNewNeedsTimeouts: a settler without its check, settle and RPC
// timeouts is refused before the backend is asked anything (payments.Config
// resolves their defaults; a zero one would leave a call unbounded).
func TestNewNeedsTimeouts(t *testing.T) {
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{{}, {CheckTimeout: time.Second, SettleTimeout: time.Second}} {
		if _, err := New(context.Background(), nil, key, c); err == nil {
			t.Errorf("New with %+v: no error", c)
		}
	}
}
