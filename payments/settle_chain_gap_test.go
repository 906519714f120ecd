package payments

import (
	"context"
	"math/big"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd"
	"sandboxd/payments/chain"
	"sandboxd/payments/internal/chaintest"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// droppingBackend is a node that accepts the next drop transactions and
// then loses them, as a node does when it evicts them from its pool or
// restarts.
type droppingBackend struct {
	chain.Backend
	drop atomic.Int32
}

func (b *droppingBackend) SendTransaction(ctx context.Context, tx *types.Transaction) error {
	if b.drop.Add(-1) >= 0 {
		return nil
	}
	return b.Backend.SendTransaction(ctx, tx)
}

// laggingBackend answers the first pending-nonce question after each send
// from a replica that has not seen the send yet, as a load-balanced RPC may.
type laggingBackend struct {
	chain.Backend
	sent atomic.Bool
}

func (b *laggingBackend) SendTransaction(ctx context.Context, tx *types.Transaction) error {
	err := b.Backend.SendTransaction(ctx, tx)
	b.sent.Store(err == nil)
	return err
}

func (b *laggingBackend) PendingNonceAt(ctx context.Context, a common.Address) (uint64, error) {
	n, err := b.Backend.PendingNonceAt(ctx, a)
	if b.sent.Swap(false) && err == nil && n > 0 {
		return n - 1, nil
	}
	return n, err
}

// TestChainSettlerRecoversFromADroppedTransaction: the node accepts a
// settlement and loses it. That settlement's outcome is unknown (its
// receipt never comes), but the next ones settle: the relayer's nonce is
// taken from the node again instead of waiting behind the gap forever.
func TestChainSettlerRecoversFromADroppedTransaction(t *testing.T) {
	t.Parallel()
	c := newTestChain(t)
	backend := &droppingBackend{Backend: c.Client}
	backend.drop.Store(1)
	g, req := gapGate(t, c, backend)
	if err := payOnce(t, c, g, req); err == nil {
		t.Fatal("the dropped settlement succeeded")
	}
	for i := range 2 {
		if err := payOnce(t, c, g, req); err != nil {
			t.Fatalf("settlement %d after the dropped one: %v", i+1, err)
		}
	}
	if got := c.Balance(t, common.HexToAddress(req.PayTo)); got != 10000 {
		t.Fatalf("payee balance %d, want 10000 (two settlements after the drop)", got)
	}
}

// TestChainSettlerIgnoresALaggingReplica: a pending nonce that is behind
// only for a moment is no gap: no nonce is reused and every settlement
// lands.
func TestChainSettlerIgnoresALaggingReplica(t *testing.T) {
	t.Parallel()
	c := newTestChain(t)
	g, req := gapGate(t, c, &laggingBackend{Backend: c.Client})
	for i := range 3 {
		if err := payOnce(t, c, g, req); err != nil {
			t.Fatalf("settlement %d: %v", i+1, err)
		}
	}
	if got := c.Balance(t, common.HexToAddress(req.PayTo)); got != 15000 {
		t.Fatalf("payee balance %d, want 15000", got)
	}
}

// gapGate is a gate settling on c through backend, with short timeouts.
// tune, when given, adjusts the settler's configuration first.
func gapGate(t *testing.T, c *chaintest.Chain, backend chain.Backend, tune ...func(*chain.Config)) (*Gate, x402.Requirements) {
	t.Helper()
	cc := testChainConfig(c.Token, big.NewInt(1337))
	cc.SettleTimeout, cc.ReceiptPoll = 3*time.Second, 20*time.Millisecond
	for _, f := range tune {
		f(&cc)
	}
	s, err := chain.New(context.Background(), backend, c.Relayer, cc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := onchainConfig(t, c)
	g, err := newGateWith(cfg, options{Settler: s, Ledger: ledgertest.OpenFile(t, cfg.Ledger)})
	if err != nil {
		t.Fatal(err)
	}
	return g, g.Requirements()
}

// payOnce pays the price once from a new funded payer through g.
func payOnce(t *testing.T, c *chaintest.Chain, g *Gate, req x402.Requirements) error {
	t.Helper()
	ctx := context.Background()
	payer := x402test.Key(t)
	c.Mint(t, crypto.PubkeyToAddress(payer.PublicKey), 5000)
	h := x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, payer, req, func(a *x402.Authorization) {
		a.ValidBefore = strconv.FormatInt(time.Now().Unix()+int64(req.MaxTimeoutSeconds), 10)
	}))
	charge, err := begin(g, ctx, paidRequest(h))
	if err != nil {
		t.Fatal(err)
	}
	_, err = charge.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}})
	return err
}
