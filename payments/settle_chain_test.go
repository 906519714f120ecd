package payments

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient/simulated"

	"sandboxd"
	"sandboxd/internal/every"
	"sandboxd/payments/chain"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// testChain is an in-process chain (id 1337) with the test EIP-3009 token
// deployed. A goroutine seals a block whenever a transaction waits in the
// pool, so the chain's clock stays on the wall clock (each sealed block
// moves it at least one second).
type testChain struct {
	sim     *simulated.Backend
	client  simulated.Client
	funder  *ecdsa.PrivateKey
	relayer *ecdsa.PrivateKey
	token   common.Address
	abi     abi.ABI
	nonceMu sync.Mutex
}

func newTestChain(t *testing.T) *testChain {
	t.Helper()
	raw, err := os.ReadFile("testdata/token.json")
	if err != nil {
		t.Fatalf("the test token (testdata/token.json): %v", err)
	}
	var artifact struct {
		ABI      json.RawMessage `json:"abi"`
		Bytecode string          `json:"bytecode"`
	}
	if err := json.Unmarshal(raw, &artifact); err != nil {
		t.Fatal(err)
	}
	c := &testChain{funder: x402test.Key(t), relayer: x402test.Key(t)}
	if c.abi, err = abi.JSON(strings.NewReader(string(artifact.ABI))); err != nil {
		t.Fatal(err)
	}
	eth := new(big.Int).Exp(big.NewInt(10), big.NewInt(21), nil)
	c.sim = simulated.NewBackend(types.GenesisAlloc{
		crypto.PubkeyToAddress(c.funder.PublicKey):  {Balance: eth},
		crypto.PubkeyToAddress(c.relayer.PublicKey): {Balance: eth},
	})
	t.Cleanup(func() { c.sim.Close() })
	c.client = c.sim.Client()

	// The miner: a block whenever a transaction waits.
	miner := every.Start(10*time.Millisecond, func(ctx context.Context) {
		if c.pending(ctx) {
			c.sim.Commit()
		}
	})
	t.Cleanup(func() { miner.Close() })

	receipt := c.send(t, nil, hexutil.MustDecode(artifact.Bytecode))
	c.token = receipt.ContractAddress
	// The receipt can be found a moment before the new head's state is:
	// wait until the token's code is there for readers of "latest".
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, err := c.client.CodeAt(context.Background(), c.token, nil)
		if err == nil && len(code) > 0 {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the token's code never appeared at %s: %v", c.token.Hex(), err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pending reports whether the funder or the relayer has a transaction in
// the pool. (The pool's nonce is current at once; the pending block's
// transaction count lags by seconds.)
func (c *testChain) pending(ctx context.Context) bool {
	for _, key := range []*ecdsa.PrivateKey{c.funder, c.relayer} {
		addr := crypto.PubkeyToAddress(key.PublicKey)
		pool, err1 := c.client.PendingNonceAt(ctx, addr)
		mined, err2 := c.client.NonceAt(ctx, addr, nil)
		if err1 == nil && err2 == nil && pool > mined {
			return true
		}
	}
	return false
}

// send sends a transaction from the funder and waits for its receipt.
func (c *testChain) send(t *testing.T, to *common.Address, data []byte) *types.Receipt {
	t.Helper()
	return c.sendFrom(t, c.funder, to, data)
}

// sendFrom sends a transaction from key and waits for its receipt.
func (c *testChain) sendFrom(t *testing.T, key *ecdsa.PrivateKey, to *common.Address, data []byte) *types.Receipt {
	t.Helper()
	ctx := context.Background()
	from := crypto.PubkeyToAddress(key.PublicKey)
	c.nonceMu.Lock()
	nonce, err := c.client.PendingNonceAt(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	head, err := c.client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(1337)), &types.DynamicFeeTx{
		ChainID: big.NewInt(1337), Nonce: nonce, GasTipCap: big.NewInt(1e9),
		GasFeeCap: new(big.Int).Add(big.NewInt(1e9), new(big.Int).Mul(head.BaseFee, big.NewInt(2))),
		Gas:       5_000_000, To: to, Data: data,
	})
	if err != nil {
		t.Fatal(err)
	}
	err = c.client.SendTransaction(ctx, tx)
	c.nonceMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	return c.waitReceipt(t, tx.Hash())
}

func (c *testChain) waitReceipt(t *testing.T, hash common.Hash) *types.Receipt {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r, err := c.client.TransactionReceipt(context.Background(), hash)
		if err == nil {
			if r.Status != types.ReceiptStatusSuccessful {
				t.Fatalf("transaction %s reverted", hash.Hex())
			}
			// The receipt can be found a moment before the head moves to
			// its block: wait, so "latest" readers see its effects.
			for time.Now().Before(deadline) {
				head, err := c.client.HeaderByNumber(context.Background(), nil)
				if err == nil && head.Number.Cmp(r.BlockNumber) >= 0 {
					return r
				}
				time.Sleep(5 * time.Millisecond)
			}
			t.Fatalf("the head never reached block %v of %s", r.BlockNumber, hash.Hex())
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("transaction %s not mined", hash.Hex())
	return nil
}

func (c *testChain) mint(t *testing.T, to common.Address, amount int64) {
	t.Helper()
	data, err := c.abi.Pack("mint", to, big.NewInt(amount))
	if err != nil {
		t.Fatal(err)
	}
	c.send(t, &c.token, data)
}

func (c *testChain) balance(t *testing.T, who common.Address) int64 {
	t.Helper()
	data, _ := c.abi.Pack("balanceOf", who)
	out, err := c.client.CallContract(context.Background(), ethereum.CallMsg{To: &c.token, Data: data}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return new(big.Int).SetBytes(out).Int64()
}

// config is the gate configuration for the test chain.
func (c *testChain) config(t *testing.T) Config {
	cfg := testConfig(t)
	cfg.Network, cfg.Asset = "eip155:1337", c.token.Hex()
	cfg.Settlement, cfg.RPCURL, cfg.RelayerKeyFile = SettleOnchain, "http://simulated", "unused"
	return cfg
}

func (c *testChain) settler(t *testing.T) *chain.Settler {
	t.Helper()
	cc := testChainConfig(c.token, big.NewInt(1337))
	cc.SettleTimeout = 20 * time.Second
	s, err := chain.New(context.Background(), c.client, c.relayer, cc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// gate returns a gate on the real clock settling on the test chain.
func (c *testChain) gate(t *testing.T) (*Gate, *chain.Settler, *ledger.SQL) {
	t.Helper()
	cfg := c.config(t)
	s := c.settler(t)
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
	g, s, _ := c.gate(t)
	req := g.Requirements()
	payTo := common.HexToAddress(req.PayTo)
	payer := x402test.Key(t)
	c.mint(t, crypto.PubkeyToAddress(payer.PublicKey), 1_000_000)

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
	if got := c.balance(t, payTo); got != 5000 {
		t.Fatalf("payee balance %d, want 5000", got)
	}
	receipt, err := c.client.TransactionReceipt(ctx, common.HexToHash(sr.Transaction))
	if err != nil || receipt.Status != 1 {
		t.Fatalf("receipt %+v, %v", receipt, err)
	}

	// A replay is refused by the ledger, and by the chain when the ledger
	// does not know it (a second server, a lost ledger).
	_, err = begin(g, ctx, paidRequest(h))
	wantPaymentError(t, err, "already used")
	g2, _, _ := c.gate(t)
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
	g, _, _ := c.gate(t)
	req := g.Requirements()
	const n = 5
	headers := make([]*x402.SettleResponse, n)
	payments := make([]http.Header, n)
	for i := range n {
		payer := x402test.Key(t)
		c.mint(t, crypto.PubkeyToAddress(payer.PublicKey), 5000)
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
		tx, _, err := c.client.TransactionByHash(ctx, common.HexToHash(sr.Transaction))
		if err != nil {
			t.Fatal(err)
		}
		nonces[tx.Nonce()] = true
		if r, err := c.client.TransactionReceipt(ctx, tx.Hash()); err != nil || r.Status != 1 {
			t.Fatalf("receipt %+v, %v", r, err)
		}
	}
	if len(nonces) != n {
		t.Fatalf("%d distinct relayer nonces for %d settlements", len(nonces), n)
	}
	if got := c.balance(t, common.HexToAddress(req.PayTo)); got != n*5000 {
		t.Fatalf("payee balance %d, want %d", got, n*5000)
	}
}

func TestChainRecover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestChain(t)
	g, s, l := c.gate(t)
	req := g.Requirements()
	payer := x402test.Key(t)
	c.mint(t, crypto.PubkeyToAddress(payer.PublicKey), 1_000_000)

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

func TestNewChainSettlerChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestChain(t)
	_, err := chain.New(ctx, c.client, c.relayer, testChainConfig(c.token, big.NewInt(84532)))
	if err == nil || !strings.Contains(err.Error(), "chain 1337") {
		t.Fatalf("wrong chain id: %v", err)
	}
	_, err = chain.New(ctx, c.client, c.relayer, testChainConfig(common.HexToAddress(x402test.PayTo), nil))
	if err == nil || !strings.Contains(err.Error(), "no contract code") {
		t.Fatalf("asset without code: %v", err)
	}
}

func TestChainSettlerStaleRelayerNonce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestChain(t)
	g, _, _ := c.gate(t)
	req := g.Requirements()
	payer := x402test.Key(t)
	c.mint(t, crypto.PubkeyToAddress(payer.PublicKey), 1_000_000)
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
	to := crypto.PubkeyToAddress(c.funder.PublicKey)
	c.sendFrom(t, c.relayer, &to, nil)
	pay()
	if got := c.balance(t, common.HexToAddress(req.PayTo)); got != 10000 {
		t.Fatalf("payee balance %d, want 10000", got)
	}
}
