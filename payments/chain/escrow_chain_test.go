package chain

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/json"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient/simulated"

	"sandboxd/payments/internal/chaintest"
	"sandboxd/x402"
	"sandboxd/x402/channel"
	"sandboxd/x402/x402test"
)

// simChainID is the simulated backend's chain id.
var simChainID = big.NewInt(1337)

// artifact is one compiled contract of payments/testdata.
type artifact struct {
	ABI     abi.ABI         `json:"-"`
	RawABI  json.RawMessage `json:"abi"`
	Runtime string          `json:"deployedBytecode"`
}

// mustArtifact reads payments/testdata/<name>.json.
func mustArtifact(tb testing.TB, name string) artifact {
	tb.Helper()
	raw, err := os.ReadFile("../testdata/" + name + ".json")
	if err != nil {
		tb.Fatal(err)
	}
	var a artifact
	if err := json.Unmarshal(raw, &a); err != nil {
		tb.Fatal(err)
	}
	if a.ABI, err = abi.JSON(strings.NewReader(string(a.RawABI))); err != nil {
		tb.Fatal(err)
	}
	return a
}

// escrowChain is an in-process chain (id 1337) with the escrow, the
// deposit collector and Multicall3 at their canonical addresses and the
// test token at x402test.Asset, all placed by the genesis alloc (none has
// a constructor). A goroutine seals a block whenever one of its accounts
// has a transaction waiting, so the chain's clock stays on the wall clock.
type escrowChain struct {
	chain   *chaintest.Chain
	client  simulated.Client
	funder  *ecdsa.PrivateKey // mints, and sends the tests' own transactions
	relayer *ecdsa.PrivateKey // the settler's key: receiverAuthorizer of the channels by default
	payer   *ecdsa.PrivateKey // has gas, to initiate withdrawals
	token   common.Address
	tokens  artifact // the token's ABI
	escrow  artifact // the escrow's ABI as compiled
	s       *Settler
	t       *testing.T // the test the chain was made for
}

func newEscrowChain(t *testing.T) *escrowChain {
	t.Helper()
	c := &escrowChain{t: t, payer: x402test.Key(t), token: common.HexToAddress(x402test.Asset),
		tokens: mustArtifact(t, "token"), escrow: mustArtifact(t, "escrow")}
	code := func(a artifact) []byte { return hexutil.MustDecode(a.Runtime) }
	c.chain = chaintest.Start(t, types.GenesisAlloc{
		channel.Escrow:    {Code: code(c.escrow)},
		channel.Collector: {Code: code(mustArtifact(t, "collector"))},
		multicall3:        {Code: code(mustArtifact(t, "multicall3"))},
		c.token:           {Code: code(c.tokens)},
	}, c.payer)
	c.client, c.funder, c.relayer = c.chain.Client, c.chain.Funder, c.chain.Relayer

	// CheckTimeout bounds DepositReceipt's wait for a receipt that never comes: long enough that
	// a busy host's slow RPC answer is not taken for no answer.
	s, err := New(context.Background(), c.client, c.relayer, Config{Asset: c.token, ChainID: simChainID,
		CheckTimeout: 10 * time.Second, SettleTimeout: 20 * time.Second, RPCTimeout: 5 * time.Second,
		ReceiptPoll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c.s = s
	return c
}

func (c *escrowChain) addr(key *ecdsa.PrivateKey) common.Address {
	return crypto.PubkeyToAddress(key.PublicKey)
}

// sendFrom sends a transaction from key and waits until its block is the
// head; it fails the test unless it succeeded.
func (c *escrowChain) sendFrom(t *testing.T, key *ecdsa.PrivateKey, to common.Address, data []byte) *types.Receipt {
	t.Helper()
	return c.chain.SendFrom(t, key, &to, data)
}

// synced waits for the receipt of hash, succeeded or reverted, and for the
// head to reach its block.
func (c *escrowChain) synced(t *testing.T, hash common.Hash) *types.Receipt {
	t.Helper()
	return c.chain.Synced(t, hash)
}

// mustOp fails the test on err, and waits until op's transaction is the
// head's.
func (c *escrowChain) mustOp(op OpReceipt, err error) OpReceipt {
	t := c.t
	t.Helper()
	if err != nil {
		t.Fatalf("%+v: %v", op, err)
	}
	c.synced(t, common.HexToHash(op.Tx))
	return op
}

func (c *escrowChain) mint(t *testing.T, to common.Address, amount int64) *types.Receipt {
	t.Helper()
	data, err := c.tokens.ABI.Pack("mint", to, big.NewInt(amount))
	if err != nil {
		t.Fatal(err)
	}
	return c.sendFrom(t, c.funder, c.token, data)
}

func (c *escrowChain) balance(t *testing.T, who common.Address) int64 {
	t.Helper()
	bal, err := c.s.TokenBalance(context.Background(), who)
	if err != nil {
		t.Fatal(err)
	}
	return bal.Int64()
}

// config is a channel of payer to payTo whose receiver authorizer is
// authorizer, with a random salt.
func (c *escrowChain) config(payer *ecdsa.PrivateKey, payTo, authorizer common.Address) channel.Config {
	return channel.Config{Payer: c.addr(payer), PayerAuthorizer: c.addr(payer), Receiver: payTo,
		ReceiverAuthorizer: authorizer, Token: c.token, WithdrawDelay: channel.MinWithdrawDelay, Salt: randomHash()}
}

// deposit is payer's signed deposit of amount to cfg's channel, valid
// until validBefore (Unix seconds).
func (c *escrowChain) deposit(t *testing.T, payer *ecdsa.PrivateKey, cfg channel.Config, amount, validBefore int64) *channel.Deposit {
	t.Helper()
	d := &channel.Deposit{Amount: big.NewInt(amount), ValidAfter: new(big.Int), ValidBefore: big.NewInt(validBefore),
		Salt: randomHash()}
	req := x402.Requirements{Network: "eip155:1337", Asset: c.token.Hex(), Extra: x402.Extra{Name: "USDC", Version: "2"}}
	digest, err := channel.ReceiveDigest(req, d, cfg.Payer, mustID(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	if d.Signature, err = x402.SignDigest(payer, digest); err != nil {
		t.Fatal(err)
	}
	return d
}

// row is a claim of total under payer's voucher of max on cfg's channel.
func row(t *testing.T, payer *ecdsa.PrivateKey, cfg channel.Config, max, total int64) VoucherClaim {
	t.Helper()
	digest, err := channel.VoucherDigest(mustID(t, cfg), big.NewInt(max), simChainID)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := x402.SignDigest(payer, digest)
	if err != nil {
		t.Fatal(err)
	}
	return VoucherClaim{Config: cfg, MaxClaimable: big.NewInt(max), Signature: sig, TotalClaimed: big.NewInt(total)}
}

func mustID(t *testing.T, cfg channel.Config) common.Hash {
	t.Helper()
	id, err := channel.ID(cfg, simChainID)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func randomHash() common.Hash {
	var h common.Hash
	_, _ = rand.Read(h[:])
	return h
}

// readChannel reads one channel's state.
func (c *escrowChain) readChannel(t *testing.T, id common.Hash) ChannelState {
	t.Helper()
	states, err := c.s.ReadChannels(context.Background(), []common.Hash{id})
	if err != nil {
		t.Fatal(err)
	}
	return states[0]
}

// wantState fails the test unless st has the balance, total claimed and
// refund nonce given.
func wantState(t *testing.T, st ChannelState, balance, claimed, nonce int64) {
	t.Helper()
	if st.Balance.Int64() != balance || st.TotalClaimed.Int64() != claimed || st.RefundNonce.Int64() != nonce {
		t.Fatalf("channel %s: balance %s, claimed %s, refund nonce %s; want %d, %d, %d", st.ID.Hex(),
			st.Balance, st.TotalClaimed, st.RefundNonce, balance, claimed, nonce)
	}
}

// wantReject fails the test unless err is a *x402.RejectError with reason
// whose message holds text.
func wantReject(t *testing.T, err error, reason, text string) {
	t.Helper()
	if got := x402.RejectReason(err, ""); got != reason || !strings.Contains(err.Error(), text) {
		t.Fatalf("error %v (reason %q); want reason %s with %q", err, got, reason, text)
	}
}
