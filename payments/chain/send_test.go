package chain

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

	"sandboxd/payments/internal/chaintest"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// droppingBackend is a node that accepts the next drop transactions and
// then loses them, as a node does when it evicts them from its pool or
// restarts.
type droppingBackend struct {
	Backend
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
	Backend
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
	c := chaintest.New(t, "../testdata/token.json")
	backend := &droppingBackend{Backend: c.Client}
	backend.drop.Store(1)
	s, req := tokenSettler(t, c, backend)
	if err := payOnce(t, c, s, req); err == nil {
		t.Fatal("the dropped settlement succeeded")
	}
	for i := range 2 {
		if err := payOnce(t, c, s, req); err != nil {
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
	c := chaintest.New(t, "../testdata/token.json")
	s, req := tokenSettler(t, c, &laggingBackend{Backend: c.Client})
	for i := range 3 {
		if err := payOnce(t, c, s, req); err != nil {
			t.Fatalf("settlement %d: %v", i+1, err)
		}
	}
	if got := c.Balance(t, common.HexToAddress(req.PayTo)); got != 15000 {
		t.Fatalf("payee balance %d, want 15000", got)
	}
}

// tokenSettler is a settler on c reached through backend, with short
// timeouts, and the terms it settles (x402test's price, payee and window,
// in c's token). tune, when given, adjusts the settler's configuration
// first.
func tokenSettler(t *testing.T, c *chaintest.Chain, backend Backend, tune ...func(*Config)) (*Settler, x402.Requirements) {
	t.Helper()
	cc := tokenConfig(c.Token, big.NewInt(chaintest.ID))
	cc.SettleTimeout, cc.ReceiptPoll = 3*time.Second, 20*time.Millisecond
	for _, f := range tune {
		f(&cc)
	}
	s, err := New(context.Background(), backend, c.Relayer, cc)
	if err != nil {
		t.Fatal(err)
	}
	req := x402test.Requirements(t)
	req.Network, req.Asset = "eip155:1337", c.Token.Hex()
	return s, req
}

// payOnce pays the price once from a new funded payer: verified, checked
// and settled by s, as the gate does.
func payOnce(t *testing.T, c *chaintest.Chain, s *Settler, req x402.Requirements) error {
	t.Helper()
	ctx := context.Background()
	payer := x402test.Key(t)
	c.Mint(t, crypto.PubkeyToAddress(payer.PublicKey), 5000)
	h := x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, payer, req, func(a *x402.Authorization) {
		a.ValidBefore = strconv.FormatInt(time.Now().Unix()+int64(req.MaxTimeoutSeconds), 10)
	}))
	p := x402test.Decode(t, h)
	if err := x402.Verify(req, p, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx, p); err != nil {
		t.Fatal(err)
	}
	_, err := s.Settle(ctx, p)
	return err
}
