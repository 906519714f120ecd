package chaintest

import (
	"context"
	"crypto/ecdsa"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// pending reports whether one of the chain's keys has a transaction in
// the pool. (The pool's nonce is current at once; the pending block's
// transaction count lags by seconds.)
func (c *Chain) pending(ctx context.Context) bool {
	for _, key := range c.keys {
		addr := crypto.PubkeyToAddress(key.PublicKey)
		pool, err1 := c.Client.PendingNonceAt(ctx, addr)
		mined, err2 := c.Client.NonceAt(ctx, addr, nil)
		if err1 == nil && err2 == nil && pool > mined {
			return true
		}
	}
	return false
}

// send sends a transaction from the funder and waits for its receipt.
func (c *Chain) send(t *testing.T, to *common.Address, data []byte) *types.Receipt {
	t.Helper()
	return c.SendFrom(t, c.Funder, to, data)
}

// SendFrom sends a transaction from key and waits for its receipt.
func (c *Chain) SendFrom(t *testing.T, key *ecdsa.PrivateKey, to *common.Address, data []byte) *types.Receipt {
	t.Helper()
	ctx := context.Background()
	from := crypto.PubkeyToAddress(key.PublicKey)
	c.nonceMu.Lock()
	nonce, err := c.Client.PendingNonceAt(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	head, err := c.Client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(ID)), &types.DynamicFeeTx{
		ChainID: big.NewInt(ID), Nonce: nonce, GasTipCap: big.NewInt(1e9),
		GasFeeCap: new(big.Int).Add(big.NewInt(1e9), new(big.Int).Mul(head.BaseFee, big.NewInt(2))),
		Gas:       5_000_000, To: to, Data: data,
	})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Client.SendTransaction(ctx, tx)
	c.nonceMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	return c.waitReceipt(t, tx.Hash())
}

// waitReceipt waits for the receipt of hash (Synced) and fails the test
// unless it succeeded.
func (c *Chain) waitReceipt(t *testing.T, hash common.Hash) *types.Receipt {
	t.Helper()
	r := c.Synced(t, hash)
	if r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("transaction %s reverted", hash.Hex())
	}
	return r
}

// Synced waits for the receipt of hash, succeeded or reverted, and until
// the head reaches its block (the receipt can be found a moment before,
// and readers of "latest" must see its effects); it returns the receipt.
func (c *Chain) Synced(t *testing.T, hash common.Hash) *types.Receipt {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r, err := c.Client.TransactionReceipt(context.Background(), hash)
		if err != nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		for time.Now().Before(deadline) {
			head, err := c.Client.HeaderByNumber(context.Background(), nil)
			if err == nil && head.Number.Cmp(r.BlockNumber) >= 0 {
				return r
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("the head never reached block %v of %s", r.BlockNumber, hash.Hex())
	}
	t.Fatalf("transaction %s not mined", hash.Hex())
	return nil
}

// Mint mints amount of the token to to.
func (c *Chain) Mint(t *testing.T, to common.Address, amount int64) {
	t.Helper()
	data, err := c.abi.Pack("mint", to, big.NewInt(amount))
	if err != nil {
		t.Fatal(err)
	}
	c.send(t, &c.Token, data)
}

// Balance is who's balance of the token.
func (c *Chain) Balance(t *testing.T, who common.Address) int64 {
	t.Helper()
	data, _ := c.abi.Pack("balanceOf", who)
	out, err := c.Client.CallContract(context.Background(), ethereum.CallMsg{To: &c.Token, Data: data}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return new(big.Int).SetBytes(out).Int64()
}
