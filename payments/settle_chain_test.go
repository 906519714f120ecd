package payments

import (
	"context"
	"math/big"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd"
	"sandboxd/payments/chain"
	"sandboxd/payments/internal/chaintest"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// newTestChain starts the in-process chain with the test token.
func newTestChain(t *testing.T) *chaintest.Chain {
	t.Helper()
	return chaintest.New(t, "testdata/token.json")
}

// onchainConfig is the gate configuration for the test chain c.
func onchainConfig(t *testing.T, c *chaintest.Chain) Config {
	cfg := testConfig(t)
	cfg.Network, cfg.Asset = "eip155:1337", c.Token.Hex()
	cfg.Settlement, cfg.RPCURL, cfg.RelayerKeyFile = SettleOnchain, "http://simulated", "unused"
	return cfg
}

// chainSettler is a settler on c with the default timeouts but a 20 s
// settlement.
func chainSettler(t *testing.T, c *chaintest.Chain) *chain.Settler {
	t.Helper()
	cc := testChainConfig(c.Token, big.NewInt(1337))
	cc.SettleTimeout = 20 * time.Second
	s, err := chain.New(context.Background(), c.Client, c.Relayer, cc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// chainGate returns a gate on the real clock settling on c.
func chainGate(t *testing.T, c *chaintest.Chain) (*Gate, *chain.Settler, *ledger.SQL) {
	t.Helper()
	cfg := onchainConfig(t, c)
	s := chainSettler(t, c)
	l := ledgertest.OpenFile(t, cfg.Ledger)
	g, err := newGateWith(cfg, options{Settler: s, Ledger: l})
	if err != nil {
		t.Fatal(err)
	}
	return g, s, l
}

func TestChainSettler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestChain(t)
	g, s, _ := chainGate(t, c)
	req := g.Requirements()
	payTo := common.HexToAddress(req.PayTo)
	payer := x402test.Key(t)
	c.Mint(t, crypto.PubkeyToAddress(payer.PublicKey), 1_000_000)

	// A real settlement moves the price.
	pp := x402test.Payload(t, payer, req, func(a *x402.Authorization) {
		a.ValidBefore = strconv.FormatInt(time.Now().Unix()+120, 10)
	})
	h := x402test.Header(t, x402.HeaderPaymentSignature, pp)
	charge, err := begin(g, ctx, paidRequest(h))
	if err != nil {
		t.Fatal(err)
	}
	out, err := charge.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}})
	if err != nil {
		t.Fatal(err)
	}
	name, sr := report(t, out)
	if name != x402.HeaderPaymentResponse || !sr.Success {
		t.Fatalf("settle response in %s: %+v", name, sr)
	}
	if got := c.Balance(t, payTo); got != 5000 {
		t.Fatalf("payee balance %d, want 5000", got)
	}
	receipt, err := c.Client.TransactionReceipt(ctx, common.HexToHash(sr.Transaction))
	if err != nil || receipt.Status != 1 {
		t.Fatalf("receipt %+v, %v", receipt, err)
	}

	// A replay is refused by the ledger, and by the chain when the ledger
	// does not know it (a second server, a lost ledger).
	_, err = begin(g, ctx, paidRequest(h))
	wantPaymentError(t, err, "already used")
	g2, _, _ := chainGate(t, c)
	_, err = begin(g2, ctx, paidRequest(h))
	wantPaymentError(t, err, x402.ReasonNonceUsed)
	p := x402test.Decode(t, h)
	if err := x402.Verify(req, p, time.Now()); err != nil {
		t.Fatal(err)
	}
	if tx, err := s.Settle(ctx, p); x402.RejectReason(err, "") != x402.ReasonNonceUsed || tx != "" {
		t.Fatalf("Settle of a used authorization = %q, %v; want nonce used and no transaction", tx, err)
	}
	if used, err := s.NonceUsed(ctx, p.Transfer.From, p.Transfer.Nonce); err != nil || !used {
		t.Fatalf("NonceUsed = %v, %v", used, err)
	}

	// An unfunded payer is refused before the run.
	poor := x402test.Key(t)
	_, err = begin(g, ctx, paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, poor, req, func(a *x402.Authorization) {
		a.ValidBefore = strconv.FormatInt(time.Now().Unix()+120, 10)
	}))))
	wantPaymentError(t, err, x402.ReasonInsufficientFunds)

	// An expired authorization (verified on a stale clock) is refused by the chain.
	past := time.Now().Add(-time.Hour)
	pp = x402test.Payload(t, payer, req, func(a *x402.Authorization) {
		a.ValidBefore = strconv.FormatInt(past.Unix()+60, 10)
	})
	p = x402test.Decode(t, x402test.Header(t, x402.HeaderPaymentSignature, pp))
	if err := x402.Verify(req, p, past); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx, p); x402.RejectReason(err, "") != x402.ReasonValidBefore {
		t.Fatalf("Check of an expired authorization = %v", err)
	}
	if _, err := s.Settle(ctx, p); x402.RejectReason(err, "") != x402.ReasonValidBefore {
		t.Fatalf("Settle of an expired authorization = %v", err)
	}
	if used, err := s.NonceUsed(ctx, p.Transfer.From, p.Transfer.Nonce); err != nil || used {
		t.Fatalf("NonceUsed of an unused nonce = %v, %v", used, err)
	}
}

func TestChainSettlerConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestChain(t)
	g, _, _ := chainGate(t, c)
	req := g.Requirements()
	const n = 5
	headers := make([]*x402.SettleResponse, n)
	payments := make([]http.Header, n)
	for i := range n {
		payer := x402test.Key(t)
		c.Mint(t, crypto.PubkeyToAddress(payer.PublicKey), 5000)
		payments[i] = x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, payer, req, func(a *x402.Authorization) {
			a.ValidBefore = strconv.FormatInt(time.Now().Unix()+120, 10)
		}))
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, h := range payments {
		wg.Go(func() {
			<-start
			charge, err := begin(g, ctx, paidRequest(h))
			if err != nil {
				t.Error(err)
				return
			}
			out, err := charge.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}})
			if err != nil {
				t.Error(err)
				return
			}
			if out == nil {
				t.Error("no settlement report")
				return
			}
			_, sr := report(t, out)
			headers[i] = &sr
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	nonces := map[uint64]bool{}
	for _, sr := range headers {
		tx, _, err := c.Client.TransactionByHash(ctx, common.HexToHash(sr.Transaction))
		if err != nil {
			t.Fatal(err)
		}
		nonces[tx.Nonce()] = true
		if r, err := c.Client.TransactionReceipt(ctx, tx.Hash()); err != nil || r.Status != 1 {
			t.Fatalf("receipt %+v, %v", r, err)
		}
	}
	if len(nonces) != n {
		t.Fatalf("%d distinct relayer nonces for %d settlements", len(nonces), n)
	}
	if got := c.Balance(t, common.HexToAddress(req.PayTo)); got != n*5000 {
		t.Fatalf("payee balance %d, want %d", got, n*5000)
	}
}

func TestChainRecover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestChain(t)
	g, s, l := chainGate(t, c)
	req := g.Requirements()
	payer := x402test.Key(t)
	c.Mint(t, crypto.PubkeyToAddress(payer.PublicKey), 1_000_000)

	// Two payments settling, one of them settled on chain, then a "crash"
	// before the ledger heard of either outcome.
	var ps []*x402.Payment
	for range 2 {
		p := x402test.Decode(t, x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, payer, req, func(a *x402.Authorization) {
			a.ValidBefore = strconv.FormatInt(time.Now().Unix()+120, 10)
		})))
		if err := x402.Verify(req, p, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := l.Reserve(ctx, ledger.Entry{Payer: p.Transfer.Payer(), Nonce: p.Transfer.NonceHex(), Amount: "5000"}); err != nil {
			t.Fatal(err)
		}
		if err := l.MarkSettling(ctx, p.Transfer.Payer(), p.Transfer.NonceHex(), nil); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if _, err := s.Settle(ctx, ps[0]); err != nil {
		t.Fatal(err)
	}
	rep, err := Recover(ctx, l, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep != (RecoverReport{Settled: 1, Released: 1}) {
		t.Fatalf("Recover = %+v", rep)
	}
	ledgertest.WantStatus(t, l, ledger.Entry{Payer: ps[0].Transfer.Payer(), Nonce: ps[0].Transfer.NonceHex()}, ledger.StatusSettled)
	ledgertest.WantStatus(t, l, ledger.Entry{Payer: ps[1].Transfer.Payer(), Nonce: ps[1].Transfer.NonceHex()}, ledger.StatusReleased)
}

func TestChainSettlerStaleRelayerNonce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestChain(t)
	g, _, _ := chainGate(t, c)
	req := g.Requirements()
	payer := x402test.Key(t)
	c.Mint(t, crypto.PubkeyToAddress(payer.PublicKey), 1_000_000)
	pay := func() {
		t.Helper()
		h := x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, payer, req, func(a *x402.Authorization) {
			a.ValidBefore = strconv.FormatInt(time.Now().Unix()+120, 10)
		}))
		charge, err := begin(g, ctx, paidRequest(h))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := charge.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); err != nil {
			t.Fatal(err)
		}
	}
	pay()
	// Someone else spends from the relayer account: the settler's next
	// nonce is now stale.
	to := crypto.PubkeyToAddress(c.Funder.PublicKey)
	c.SendFrom(t, c.Relayer, &to, nil)
	pay()
	if got := c.Balance(t, common.HexToAddress(req.PayTo)); got != 10000 {
		t.Fatalf("payee balance %d, want 10000", got)
	}
}
