package chain

import (
	"context"
	"errors"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"sandboxd/payments/internal/chaintest"
)

// stuckBackend is a node that keeps the first transaction in its pool and
// never mines it (its fees are below what blocks take), until a
// replacement with at least 10 % higher fees comes for its nonce.
type stuckBackend struct {
	Backend
	mined interface {
		NonceAt(ctx context.Context, a common.Address, n *big.Int) (uint64, error)
	}
	mu        sync.Mutex
	holdFirst bool
	stuck     *types.Transaction
}

func (b *stuckBackend) SendTransaction(ctx context.Context, tx *types.Transaction) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.holdFirst {
		b.holdFirst, b.stuck = false, tx
		return nil
	}
	if b.stuck != nil && tx.Nonce() == b.stuck.Nonce() {
		min := new(big.Int).Div(new(big.Int).Mul(b.stuck.GasTipCap(), big.NewInt(110)), big.NewInt(100))
		if tx.GasTipCap().Cmp(min) < 0 {
			return errors.New("replacement transaction underpriced")
		}
		b.stuck = nil
	}
	return b.Backend.SendTransaction(ctx, tx)
}

func (b *stuckBackend) PendingNonceAt(ctx context.Context, a common.Address) (uint64, error) {
	n, err := b.Backend.PendingNonceAt(ctx, a)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil && b.stuck != nil && n <= b.stuck.Nonce() {
		n = b.stuck.Nonce() + 1 // the pool holds it
	}
	return n, err
}

func (b *stuckBackend) NonceAt(ctx context.Context, a common.Address, n *big.Int) (uint64, error) {
	return b.mined.NonceAt(ctx, a, n)
}

// TestChainSettlerReplacesAStuckTransaction: a settlement transaction the
// node keeps but never mines is replaced, same nonce, higher fees; the
// settlement succeeds with the replacement's hash, and the next one is not
// held behind it.
func TestChainSettlerReplacesAStuckTransaction(t *testing.T) {
	t.Parallel()
	c := chaintest.New(t, "../testdata/token.json")
	backend := &stuckBackend{Backend: c.Client, mined: c.Client, holdFirst: true}
	s, req := tokenSettler(t, c, backend, func(cc *Config) { cc.BumpAfter = 300 * time.Millisecond })
	for i := range 2 {
		if err := payOnce(t, c, s, req); err != nil {
			t.Fatalf("settlement %d: %v", i+1, err)
		}
	}
	if backend.stuck != nil || backend.holdFirst {
		t.Fatal("the stuck transaction was never replaced")
	}
	if got := c.Balance(t, common.HexToAddress(req.PayTo)); got != 10000 {
		t.Fatalf("payee balance %d, want 10000", got)
	}
}
