package payments

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"sandboxd"
	"sandboxd/payments/chain"
	"sandboxd/payments/internal/chaintest"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// faultRPCTimeout is the per-call timeout of the fault tests: a slow
// endpoint costs this much per call, and a healthy call must answer within
// it on a loaded machine.
const faultRPCTimeout = time.Second

// faultSettleTimeout bounds a settlement whose receipt never comes: it
// waits this long.
const faultSettleTimeout = 2500 * time.Millisecond

// faultChain is a test chain reached over HTTP through a fault-injecting
// JSON-RPC proxy.
type faultChain struct {
	*chaintest.Chain
	proxy *rpcProxy
	srv   *flakyServer
}

func newFaultChain(t *testing.T) *faultChain {
	t.Helper()
	c := newTestChain(t)
	// The simulated client embeds an *ethclient.Client in a field named
	// Client, which hides that type's Client method.
	ec, ok := reflect.ValueOf(c.Client).FieldByName("Client").Interface().(*ethclient.Client)
	if !ok {
		t.Fatalf("the simulated client %T holds no *ethclient.Client", c.Client)
	}
	p := newRPCProxy(ec.Client())
	return &faultChain{Chain: c, proxy: p, srv: newFlakyServer(t, p)}
}

// faultConfig is the onchain configuration reaching url with the test
// chain's relayer and short timeouts.
func faultConfig(t *testing.T, c *chaintest.Chain, url string) Config {
	t.Helper()
	cfg := onchainConfig(t, c)
	cfg.RPCURL = url
	cfg.RelayerKeyFile = filepath.Join(t.TempDir(), "relayer.key")
	if err := os.WriteFile(cfg.RelayerKeyFile, []byte(hex.EncodeToString(crypto.FromECDSA(c.Relayer))), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.VerifyTimeout, cfg.SettleTimeout, cfg.RPCTimeout = 5*time.Second, 20*time.Second, faultRPCTimeout
	return cfg
}

// gate dials the chain through the proxy and returns a gate on a fresh
// ledger.
func (c *faultChain) gate(t *testing.T) (*Gate, *chain.Settler, *ledger.SQL) {
	t.Helper()
	l := ledgertest.OpenFile(t, filepath.Join(t.TempDir(), "ledger.db"))
	g, s := c.gateOn(t, l, 20*time.Second)
	return g, s, l
}

// gateOn dials the chain through the proxy with a fresh settler (which
// fetches the relayer's nonce anew, and replaces a transaction stuck for
// 5 s) waiting up to settle for a receipt, and returns a gate on l.
func (c *faultChain) gateOn(t *testing.T, l *ledger.SQL, settle time.Duration) (*Gate, *chain.Settler) {
	t.Helper()
	cfg := faultConfig(t, c.Chain, c.srv.URL())
	s, err := dialChain(context.Background(), cfg, mustRequirements(t, cfg), nil, func(cc *chain.Config) {
		cc.SettleTimeout, cc.BumpAfter, cc.ReceiptPoll = settle, 5*time.Second, 20*time.Millisecond
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	g, err := newGateWith(cfg, options{Settler: s, Ledger: l})
	if err != nil {
		t.Fatal(err)
	}
	return g, s
}

func mustRequirements(t *testing.T, cfg Config) x402.Requirements {
	t.Helper()
	req, err := cfg.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// funded returns a payment of a new payer funded with 1 USDC, and the
// payer's address.
func (c *faultChain) funded(t *testing.T, req x402.Requirements) (http.Header, common.Address) {
	t.Helper()
	key := x402test.Key(t)
	payer := crypto.PubkeyToAddress(key.PublicKey)
	c.Mint(t, payer, 1_000_000)
	return x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, key, req, func(a *x402.Authorization) {
		a.ValidBefore = strconv.FormatInt(time.Now().Unix()+120, 10)
	})), payer
}

// TestChainRPCFaultsAtStart: an endpoint that is closed, slow, or answers
// HTML, invalid JSON or JSON-RPC errors stops the start with an error
// naming payments.rpc_url and its value, within the RPC timeout.
func TestChainRPCFaultsAtStart(t *testing.T) {
	t.Parallel()
	key := x402test.Key(t)
	c := &chaintest.Chain{Relayer: key} // only the key and the config are used
	for _, fault := range []rpcFault{faultNone, faultSlow, faultHTML, faultBadJSON, faultRPCError} {
		name := faultNames[fault]
		if fault == faultNone {
			name = "closed port"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := newRPCProxy(nil)
			p.set("*", -1, fault)
			srv := newFlakyServer(t, p)
			if fault == faultNone {
				srv.Down()
			}
			cfg := faultConfig(t, c, srv.URL())
			start := time.Now()
			_, err := dialChain(context.Background(), cfg, mustRequirements(t, cfg), nil)
			if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
				t.Fatalf("dialChain = %v, want CodeUnavailable", err)
			}
			if msg := err.Error(); !strings.Contains(msg, "payments.rpc_url "+srv.URL()) || !strings.Contains(msg, "eth_chainId") {
				t.Fatalf("error %q does not name payments.rpc_url %s and the call", msg, srv.URL())
			}
			if d := time.Since(start); d > 5*faultRPCTimeout {
				t.Fatalf("took %s; the RPC timeout is %s", d, faultRPCTimeout)
			}
		})
	}
}

// TestChainRPCFaultsAtCheck: when the check cannot reach the chain the
// payment is refused as unavailable, nothing is reserved, and the same
// payment goes through once the chain answers again. NonceUsed fails the
// same way.
func TestChainRPCFaultsAtCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newFaultChain(t)
	g, s, l := c.gate(t)
	req := g.Requirements()
	for _, fault := range []rpcFault{faultNone, faultSlow, faultHTML, faultBadJSON, faultRPCError} {
		name := faultNames[fault]
		if fault == faultNone {
			name = "closed port"
		}
		t.Run(name, func(t *testing.T) {
			h, payer := c.funded(t, req)
			if fault == faultNone {
				c.srv.Down()
			} else {
				c.proxy.set("eth_call", -1, fault)
			}
			_, err := begin(g, ctx, paidRequest(h))
			if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(sandboxd.ErrorMessage(err), "the chain RPC failed") {
				t.Fatalf("Begin = %v, want CodeUnavailable saying the chain RPC failed", err)
			}
			if _, err := l.Get(ctx, payer.Hex(), x402test.Decode(t, h).Exact.Authorization.Nonce); err == nil {
				t.Fatal("a payment was reserved though its check failed")
			}
			if fault == faultNone {
				c.srv.Up()
			} else if c.proxy.clear() == 0 {
				t.Fatal("eth_call was never called")
			}
			charge, err := begin(g, ctx, paidRequest(h))
			if err != nil {
				t.Fatalf("the same payment after the chain came back: %v", err)
			}
			charge.Release(ctx)
		})
	}
	// A refusal still comes through the proxy as a refusal, not an outage.
	poor := x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), req, func(a *x402.Authorization) {
		a.ValidBefore = strconv.FormatInt(time.Now().Unix()+120, 10)
	}))
	_, err := begin(g, ctx, paidRequest(poor))
	wantPaymentError(t, err, x402.ReasonInsufficientFunds)

	// Recover's question (authorizationState) fails as unavailable, which
	// leaves a settling row settling.
	for _, fault := range []rpcFault{faultSlow, faultHTML, faultBadJSON, faultRPCError} {
		c.proxy.set("eth_call", -1, fault)
		_, err := s.NonceUsed(ctx, common.Address{1}, [32]byte{2})
		if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || errors.Is(err, errNonceStateUnknown) {
			t.Errorf("%s: NonceUsed = %v, want CodeUnavailable", faultNames[fault], err)
		}
	}
	c.proxy.clear()
}

// settleFault is one fault met during Settle, and what must come of it.
type settleFault struct {
	name   string
	method string // "" takes the endpoint down (connection refused)
	faults []rpcFault
	times  int // calls hit, meeting faults in turn; negative: every call
	// want is the ledger row's end: settled (the answer is delivered),
	// released (never sent: the same payment is settled on a retry) or
	// settling (sent, outcome unknown: pending, a retry is refused, the
	// resolver settles or releases it).
	want string
	// charged says whether the payer ends up paying once (never twice).
	charged bool
}

// runSettleFaults runs each case on one chain, in turn: Begin, fault,
// Settle, check the answer and the row, clear the fault, retry the same
// payment, check the payer paid at most once.
func runSettleFaults(t *testing.T, cases []settleFault) {
	ctx := context.Background()
	c := newFaultChain(t)
	g, _, l := c.gate(t)
	req := g.Requirements()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			settle := 20 * time.Second
			if tc.want == ledger.StatusSettling {
				settle = faultSettleTimeout // it waits this long for a receipt
			}
			// A fresh settler, so the relayer nonce is fetched, and can fail.
			g, _ := c.gateOn(t, l, settle)
			h, payer := c.funded(t, req)
			p := x402test.Decode(t, h)
			entry := ledger.Entry{Payer: payer.Hex(), Nonce: p.Exact.Authorization.Nonce}
			charge, err := begin(g, ctx, paidRequest(h))
			if err != nil {
				t.Fatal(err)
			}
			if tc.method == "" {
				c.srv.Down()
			} else {
				c.proxy.set(tc.method, tc.times, tc.faults...)
			}
			out, err := charge.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}})
			if tc.method == "" {
				c.srv.Up()
			} else if c.proxy.clear() == 0 {
				t.Fatalf("%s was never called", tc.method)
			}
			row := ledgertest.WantStatus(t, l, entry, tc.want)

			if tc.want == ledger.StatusSettled {
				if err != nil || out == nil || !out.Success {
					t.Fatalf("Settle = %v, %v; want the answer delivered", out, err)
				}
			} else if tc.want == ledger.StatusSettling {
				if row.TxHash == "" {
					t.Fatalf("row %+v: want the transaction hash", row)
				}
				wantPending(t, l, entry, out, err, row.TxHash)
			} else {
				wantSettleRefused(t, out, err, row)
			}
			switch tc.want {
			case ledger.StatusReleased:
				if !strings.Contains(sandboxd.ErrorMessage(err), "nothing was charged") {
					t.Fatalf("message %q does not say nothing was charged", sandboxd.ErrorMessage(err))
				}
				retry, err := begin(g, ctx, paidRequest(h))
				if err != nil {
					t.Fatalf("retry of a payment whose settlement was never sent: %v", err)
				}
				if _, err := retry.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); err != nil {
					t.Fatalf("settling the retry: %v", err)
				}
				ledgertest.WantStatus(t, l, entry, ledger.StatusSettled)
			case ledger.StatusSettling:
				// The resolver looks it up: collected or not, never twice.
				if _, err := g.ResolvePending(ctx); err != nil {
					t.Fatal(err)
				}
				if !tc.charged {
					ledgertest.WantStatus(t, l, entry, ledger.StatusReleased)
					break
				}
				if row := ledgertest.WantStatus(t, l, entry, ledger.StatusSettled); row.TxHash == "" {
					t.Fatalf("settled row %+v lost its transaction hash", row)
				}
				_, err := begin(g, ctx, paidRequest(h))
				wantPaymentError(t, err, "already used")
			}
			charged := tc.charged || tc.want != ledger.StatusSettling
			if got, want := c.Balance(t, payer), int64(1_000_000); (got == want-5000) != charged || got < want-5000 {
				t.Fatalf("payer balance %d (charged %v); want charged once: %v", got, want-got, charged)
			}
		})
	}
}

// wantSettleRefused asserts a failed settlement: no answer (no headers),
// CodePayment with a failed PAYMENT-RESPONSE naming the row's transaction,
// and a message saying the chain RPC failed.
func wantSettleRefused(t *testing.T, out *sandboxd.Settlement, err error, row ledger.Entry) {
	t.Helper()
	if out != nil {
		t.Fatalf("settlement %+v with a failed settlement: the answer would be delivered", out)
	}
	e := wantPaymentError(t, err, "the answer is withheld", "the chain RPC failed")
	sr := errReport(t, e)
	if sr.Success || sr.ErrorReason != x402.ReasonUnexpectedSettle || sr.Transaction != row.TxHash {
		t.Fatalf("settle response %+v, row %+v", sr, row)
	}
}

// TestChainRPCFaultsBeforeSend: the chain fails before the settlement is
// sent: the answer is withheld, nobody is charged, the payment is released
// and a retry of it is settled exactly once.
func TestChainRPCFaultsBeforeSend(t *testing.T) {
	t.Parallel()
	runSettleFaults(t, []settleFault{
		{name: "closed port", want: ledger.StatusReleased},
		{name: "estimateGas slow", method: "eth_estimateGas", faults: []rpcFault{faultSlow}, times: -1, want: ledger.StatusReleased},
		{name: "estimateGas html", method: "eth_estimateGas", faults: []rpcFault{faultHTML}, times: -1, want: ledger.StatusReleased},
		{name: "estimateGas bad json", method: "eth_estimateGas", faults: []rpcFault{faultBadJSON}, times: -1, want: ledger.StatusReleased},
		{name: "estimateGas rpc error", method: "eth_estimateGas", faults: []rpcFault{faultRPCError}, times: -1, want: ledger.StatusReleased},
		{name: "fees html", method: "eth_getBlockByNumber", faults: []rpcFault{faultHTML}, times: -1, want: ledger.StatusReleased},
		{name: "relayer nonce bad json", method: "eth_getTransactionCount", faults: []rpcFault{faultBadJSON}, times: -1, want: ledger.StatusReleased},
		{name: "send refused by the node", method: "eth_sendRawTransaction", faults: []rpcFault{faultRefuseTx}, times: -1, want: ledger.StatusReleased},
	})
}

// TestChainRPCFaultsAfterSend: the chain fails once the settlement may
// have been sent. If its receipt comes, the answer is delivered; if not,
// the answer is pending (202) with the transaction hash, the row stays
// settling, a retry is refused, and the resolver settles or releases it
// from the chain, so the payer is never charged twice (and the answer is
// never given unpaid).
func TestChainRPCFaultsAfterSend(t *testing.T) {
	t.Parallel()
	garbage := []rpcFault{faultHTML, faultBadJSON, faultRPCError, faultSlow}
	runSettleFaults(t, []settleFault{
		{name: "send answer lost", method: "eth_sendRawTransaction", faults: []rpcFault{faultLostAnswer}, times: -1, want: ledger.StatusSettled},
		{name: "send answer slow", method: "eth_sendRawTransaction", faults: []rpcFault{faultSlowAnswer}, times: -1, want: ledger.StatusSettled},
		{name: "receipt flaky", method: "eth_getTransactionReceipt", faults: garbage[:3], times: 3, want: ledger.StatusSettled},
		{name: "send dropped", method: "eth_sendRawTransaction", faults: []rpcFault{faultSlow}, times: -1, want: ledger.StatusSettling, charged: false},
		// Each poll meets the next of html, bad JSON, a JSON-RPC error, no answer.
		{name: "receipt never", method: "eth_getTransactionReceipt", faults: garbage, times: -1, want: ledger.StatusSettling, charged: true},
	})
}
