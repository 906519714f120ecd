// Package chaintest runs an in-process chain (id 1337) with the test
// EIP-3009 token of payments/testdata deployed, for the tests of payments
// and payments/chain. It knows neither package: a test builds its settler
// or gate on the chain's client and keys.
package chaintest

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient/simulated"

	"sandboxd/internal/every"
	"sandboxd/x402/x402test"
)

// ID is the chain's id.
const ID = 1337

// Chain is an in-process chain (New: with the test token deployed). A goroutine
// seals a block whenever a transaction waits in the pool, so the chain's
// clock stays on the wall clock (each sealed block moves it at least one
// second).
type Chain struct {
	// Client is the chain's RPC client.
	Client simulated.Client
	// Funder holds ether; it deploys and mints the token.
	Funder *ecdsa.PrivateKey
	// Relayer holds ether: the settler's key.
	Relayer *ecdsa.PrivateKey
	// Token is the test token's address (New's; zero from Start).
	Token common.Address

	sim     *simulated.Backend
	abi     abi.ABI
	nonceMu sync.Mutex
	// keys are the accounts the miner watches: the funder, the relayer
	// and Start's others.
	keys []*ecdsa.PrivateKey
}

// Start starts a chain, closed at cleanup, with no token: alloc places
// what the test needs at genesis (code at fixed addresses), and the
// funder, the relayer and others hold ether. A goroutine seals a block
// whenever one of them has a transaction waiting.
func Start(t *testing.T, alloc types.GenesisAlloc, others ...*ecdsa.PrivateKey) *Chain {
	t.Helper()
	c := &Chain{Funder: x402test.Key(t), Relayer: x402test.Key(t)}
	c.keys = append([]*ecdsa.PrivateKey{c.Funder, c.Relayer}, others...)
	genesis := types.GenesisAlloc{}
	for a, acct := range alloc {
		genesis[a] = acct
	}
	eth := new(big.Int).Exp(big.NewInt(10), big.NewInt(21), nil)
	for _, k := range c.keys {
		genesis[crypto.PubkeyToAddress(k.PublicKey)] = types.Account{Balance: eth}
	}
	c.sim = simulated.NewBackend(genesis)
	t.Cleanup(func() { c.sim.Close() })
	c.Client = c.sim.Client()
	miner := every.Start(10*time.Millisecond, func(ctx context.Context) {
		if c.pending(ctx) {
			c.sim.Commit()
		}
	})
	t.Cleanup(func() { miner.Close() })
	return c
}

// New starts a chain, closed at cleanup, and deploys the token compiled in
// artifact (payments/testdata/token.json, as a path from the test's
// directory).
func New(t *testing.T, artifact string) *Chain {
	t.Helper()
	raw, err := os.ReadFile(artifact)
	if err != nil {
		t.Fatalf("the test token (%s): %v", artifact, err)
	}
	var compiled struct {
		ABI      json.RawMessage `json:"abi"`
		Bytecode string          `json:"bytecode"`
	}
	if err := json.Unmarshal(raw, &compiled); err != nil {
		t.Fatal(err)
	}
	tokenABI, err := abi.JSON(strings.NewReader(string(compiled.ABI)))
	if err != nil {
		t.Fatal(err)
	}
	c := Start(t, nil)
	c.abi = tokenABI
	receipt := c.send(t, nil, hexutil.MustDecode(compiled.Bytecode))
	c.Token = receipt.ContractAddress
	// The receipt can be found a moment before the new head's state is:
	// wait until the token's code is there for readers of "latest".
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, err := c.Client.CodeAt(context.Background(), c.Token, nil)
		if err == nil && len(code) > 0 {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the token's code never appeared at %s: %v", c.Token.Hex(), err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
