package chain

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/payments/internal/chaintest"
	"sandboxd/x402/x402test"
)

// tokenConfig is a Config for the token at asset on chainID, with the
// timeouts payments configures by default (verify 10 s, settle 60 s, RPC
// 10 s).
func tokenConfig(asset common.Address, chainID *big.Int) Config {
	return Config{Asset: asset, ChainID: chainID, CheckTimeout: 10 * time.Second,
		SettleTimeout: 60 * time.Second, RPCTimeout: 10 * time.Second}
}

func TestNewChainSettlerChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := chaintest.New(t, "../testdata/token.json")
	_, err := New(ctx, c.Client, c.Relayer, tokenConfig(c.Token, big.NewInt(84532)))
	if err == nil || !strings.Contains(err.Error(), "chain 1337") {
		t.Fatalf("wrong chain id: %v", err)
	}
	_, err = New(ctx, c.Client, c.Relayer, tokenConfig(common.HexToAddress(x402test.PayTo), nil))
	if err == nil || !strings.Contains(err.Error(), "no contract code") {
		t.Fatalf("asset without code: %v", err)
	}
}
