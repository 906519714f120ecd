package chain

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"

	"sandboxd"
	"sandboxd/payments/internal/remote"
	"sandboxd/x402"
	"sandboxd/x402/channel"
	"sandboxd/x402/x402test"
)

// callBackend counts the eth_calls to Multicall3 and, when fail is set,
// answers them with it instead of the chain.
type callBackend struct {
	Backend
	multicalls atomic.Int32
	fail       func() ([]byte, error)
}

func (b *callBackend) CallContract(ctx context.Context, m ethereum.CallMsg, n *big.Int) ([]byte, error) {
	if m.To != nil && *m.To == multicall3 {
		b.multicalls.Add(1)
		if b.fail != nil {
			return b.fail()
		}
	}
	return b.Backend.CallContract(ctx, m, n)
}

// reader returns a keyless settler on c's chain through b.
func (c *escrowChain) reader(t *testing.T, b Backend) *Settler {
	t.Helper()
	r, err := NewReader(context.Background(), b, Config{Asset: c.token, ChainID: simChainID,
		CheckTimeout: 10 * time.Second, SettleTimeout: 10 * time.Second, RPCTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReadChannelsBatches: 150 channels, mostly never funded, are read in
// two eth_calls, in order; a funded channel with a pending withdrawal (the
// payer's initiateWithdraw) shows its balance and the withdrawal's amount
// and time.
func TestReadChannelsBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newEscrowChain(t)
	c.mint(t, c.addr(c.payer), 1_000_000)
	cfg := c.config(c.payer, c.addr(x402test.Key(t)), c.addr(c.relayer))
	id := mustID(t, cfg)
	c.mustOp(c.s.Deposit(ctx, cfg, c.deposit(t, c.payer, cfg, 100_000, time.Now().Unix()+3600)))
	data, err := c.escrow.ABI.Pack("initiateWithdraw", toABIConfig(cfg), big.NewInt(40_000))
	if err != nil {
		t.Fatal(err)
	}
	receipt := c.sendFrom(t, c.payer, channel.Escrow, data)
	block, err := c.client.HeaderByNumber(ctx, receipt.BlockNumber)
	if err != nil {
		t.Fatal(err)
	}

	b := &callBackend{Backend: c.client}
	r := c.reader(t, b)
	ids := make([]common.Hash, 150)
	for i := range ids {
		ids[i] = randomHash()
	}
	ids[120] = id
	states, err := r.ReadChannels(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if n := b.multicalls.Load(); n != 2 || len(states) != len(ids) {
		t.Fatalf("%d states in %d eth_calls; want 150 in 2", len(states), n)
	}
	for i, st := range states {
		if st.ID != ids[i] {
			t.Fatalf("state %d is of %s, want %s", i, st.ID.Hex(), ids[i].Hex())
		}
		if i == 120 {
			continue
		}
		if st.Balance.Sign() != 0 || st.TotalClaimed.Sign() != 0 || st.WithdrawAmount.Sign() != 0 ||
			st.WithdrawInitiatedAt != 0 || st.RefundNonce.Sign() != 0 {
			t.Fatalf("unfunded channel %d reads %+v", i, st)
		}
	}
	st := states[120]
	wantState(t, st, 100_000, 0, 0)
	if st.WithdrawAmount.Int64() != 40_000 || st.WithdrawInitiatedAt != block.Time {
		t.Fatalf("withdrawal %s at %d; want 40000 at %d", st.WithdrawAmount, st.WithdrawInitiatedAt, block.Time)
	}
	if states, err := r.ReadChannels(ctx, nil); err != nil || len(states) != 0 || b.multicalls.Load() != 2 {
		t.Fatalf("ReadChannels of none = %v, %v after %d calls", states, err, b.multicalls.Load())
	}
}

// TestReadChannelsFailures: an RPC that fails, a chain without Multicall3
// and an escrow whose view reverts are each CodeUnavailable, saying which.
func TestReadChannelsFailures(t *testing.T) {
	t.Parallel()
	c := newEscrowChain(t)
	b := &callBackend{Backend: c.client}
	r := c.reader(t, b)
	failing := func(err error) func() ([]byte, error) { return func() ([]byte, error) { return nil, err } }
	emptyOK, _ := multicallABI.Methods["tryAggregate"].Outputs.Pack([]mcResult{{Success: false}})
	for _, tc := range []struct {
		name string
		fail func() ([]byte, error)
		want string
	}{
		{"rpc down", failing(errors.New("connection refused")), "the chain RPC failed to read"},
		{"no multicall3", func() ([]byte, error) { return nil, nil }, "not the escrow's"},
		{"sub-call failed", func() ([]byte, error) { return emptyOK, nil }, "not the escrow's"},
	} {
		b.fail = tc.fail
		_, err := r.ReadChannels(context.Background(), []common.Hash{randomHash()})
		var se *sandboxd.Error
		if !errors.As(err, &se) || se.Code != sandboxd.CodeUnavailable || !strings.Contains(se.Message, tc.want) {
			t.Errorf("%s: %v; want CodeUnavailable saying %q", tc.name, err, tc.want)
		}
	}
}

// TestKeylessSettler: a settler without a relayer key reads and simulates
// (from the zero address) but refuses to send, before anything is sent.
func TestKeylessSettler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newEscrowChain(t)
	c.mint(t, c.addr(c.payer), 1_000)
	r := c.reader(t, c.client)
	if r.Relayer() != (common.Address{}) || r.ChainID().Cmp(simChainID) != 0 {
		t.Fatalf("reader relayer %s, chain %s", r.Relayer().Hex(), r.ChainID())
	}
	cfg := c.config(c.payer, c.addr(x402test.Key(t)), c.addr(c.relayer))
	d := c.deposit(t, c.payer, cfg, 1_000, time.Now().Unix()+3600)
	if err := r.SimulateDeposit(ctx, cfg, d); err != nil {
		t.Fatalf("SimulateDeposit without a key: %v", err)
	}
	if bal, err := r.TokenBalance(ctx, c.addr(c.payer)); err != nil || bal.Int64() != 1_000 {
		t.Fatalf("TokenBalance = %v, %v", bal, err)
	}
	sends := map[string]func() error{
		"deposit": func() error { _, err := r.Deposit(ctx, cfg, d); return err },
		"claim":   func() error { _, err := r.Claim(ctx, []VoucherClaim{row(t, c.payer, cfg, 1, 1)}); return err },
		"sweep":   func() error { _, err := r.Sweep(ctx, cfg.Receiver, cfg.Token); return err },
		"refund":  func() error { _, err := r.Refund(ctx, cfg, big.NewInt(1), nil); return err },
		"settle":  func() error { _, err := r.Settle(ctx, &x402.Payment{}); return err },
	}
	for name, send := range sends {
		if err := send(); !errors.Is(err, ErrNoRelayerKey) || !errors.Is(err, remote.ErrNotSent) {
			t.Errorf("%s without a key: %v", name, err)
		}
	}
	if _, err := New(ctx, c.client, nil, Config{Asset: c.token, CheckTimeout: time.Second, SettleTimeout: time.Second,
		RPCTimeout: time.Second}); err == nil {
		t.Error("New without a key: no error")
	}
}

// TestDialReaderUnreachable: DialReader fails at start, CodeUnavailable,
// when the RPC cannot be reached.
func TestDialReaderUnreachable(t *testing.T) {
	t.Parallel()
	req := x402test.Requirements(t)
	_, err := DialReader(context.Background(), req, Config{Endpoint: "http://127.0.0.1:1/KEY", CheckTimeout: time.Second,
		SettleTimeout: time.Second, RPCTimeout: time.Second})
	var se *sandboxd.Error
	if !errors.As(err, &se) || se.Code != sandboxd.CodeUnavailable || strings.Contains(err.Error(), "KEY") {
		t.Fatalf("DialReader of a closed port: %v", err)
	}
}
