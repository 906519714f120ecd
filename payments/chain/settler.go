// Package chain is the on-chain settler: it checks payments against the
// chain's state and collects them itself, sending the token's
// transferWithAuthorization from a relayer account that pays the gas. It is
// also the client of the x402 batch-settlement escrow: it reads channels
// (through Multicall3), simulates and sends deposits, claims, sweeps and
// refunds, and checks deposits a facilitator says it made.
package chain

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum"
	bind "github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"

	"sandboxd"
	"sandboxd/payments/internal/remote"
	"sandboxd/x402"
)

// gasMarginPercent is added to the estimated gas of a settlement.
const gasMarginPercent = 20

// Backend is what a Settler needs of a chain client. Both
// *ethclient.Client and the client of ethclient/simulated have it.
type Backend interface {
	bind.ContractBackend
	bind.DeployBackend
	ChainID(ctx context.Context) (*big.Int, error)
}

// pendingCaller is the optional pending-state call NonceUsed prefers, so a
// settlement still in the mempool counts as used.
type pendingCaller interface {
	PendingCallContract(ctx context.Context, call ethereum.CallMsg) ([]byte, error)
}

// Config configures a Settler. The timeouts are required (payments.Config
// resolves their defaults).
type Config struct {
	// Asset is the EIP-3009 token.
	Asset common.Address
	// ChainID, when set, must equal the backend's chain id.
	ChainID *big.Int
	// CheckTimeout bounds Check and NonceUsed (payments.verify_timeout).
	CheckTimeout time.Duration
	// SettleTimeout bounds Settle up to the receipt (payments.settle_timeout).
	SettleTimeout time.Duration
	// RPCTimeout bounds each call to the backend, inside the bounds above,
	// so one hung call cannot use up a whole settlement (payments.rpc_timeout).
	RPCTimeout time.Duration
	// ReceiptPoll is how often Settle asks for a settlement's receipt;
	// zero means once a second.
	ReceiptPoll time.Duration
	// BumpAfter is how long a settlement transaction may stay unmined
	// before it is replaced with higher fees; zero means a quarter of
	// SettleTimeout.
	BumpAfter time.Duration
	// Endpoint, when set, is payments.rpc_url's value; the errors of New
	// and Dial name its scheme and host only (see RedactURL).
	Endpoint string
	// Log receives the settler's events; nil discards them.
	Log *slog.Logger
}

// defaultReceiptPoll is how often Settle asks for a settlement's receipt.
const defaultReceiptPoll = time.Second

// Settler settles payments itself: it sends transferWithAuthorization
// to the token from a relayer account that pays the gas. It is also the
// client of the batch-settlement escrow (escrow.go): channel reads,
// deposits, claims, sweeps and refunds. Made without a key (NewReader,
// DialReader) it only reads and simulates.
type Settler struct {
	backend       Backend
	key           *ecdsa.PrivateKey // nil: a reader, which sends nothing
	relayer       common.Address
	asset         common.Address
	chainID       *big.Int
	signer        types.Signer
	checkTimeout  time.Duration
	settleTimeout time.Duration
	rpcTimeout    time.Duration
	receiptPoll   time.Duration
	bumpAfter     time.Duration // a settlement transaction stuck this long is replaced
	log           *slog.Logger
	close         func()

	// mu serializes the relayer's account nonces across concurrent
	// settlements; next is valid only when known is set.
	mu    sync.Mutex
	next  uint64
	known bool
}

// New returns a settler sending from key's account through
// backend. It checks the chain id and that the asset has code; a backend
// that cannot be reached or answers garbage is CodeUnavailable, naming
// payments.rpc_url (and c.Endpoint).
func New(ctx context.Context, backend Backend, key *ecdsa.PrivateKey, c Config) (*Settler, error) {
	if key == nil {
		return nil, errors.New("payments.chain: a settler needs a relayer key (NewReader makes one without)")
	}
	return open(ctx, backend, key, c)
}

// NewReader returns a settler without a relayer key, as New checks it: it
// reads the chain and simulates calls (from the zero address), and every
// method that sends a transaction fails with ErrNoRelayerKey.
func NewReader(ctx context.Context, backend Backend, c Config) (*Settler, error) {
	return open(ctx, backend, nil, c)
}

// open is New with key optional.
func open(ctx context.Context, backend Backend, key *ecdsa.PrivateKey, c Config) (*Settler, error) {
	const op = "payments.chain"
	s := &Settler{backend: backend, key: key, asset: c.Asset,
		checkTimeout: c.CheckTimeout, settleTimeout: c.SettleTimeout, rpcTimeout: c.RPCTimeout,
		receiptPoll: c.ReceiptPoll, log: c.Log}
	if key != nil {
		s.relayer = crypto.PubkeyToAddress(key.PublicKey)
	}
	if s.checkTimeout <= 0 || s.settleTimeout <= 0 || s.rpcTimeout <= 0 {
		return nil, errors.New("payments.chain: the check, settle and RPC timeouts must be positive")
	}
	s.bumpAfter = c.BumpAfter
	if s.bumpAfter <= 0 {
		s.bumpAfter = s.settleTimeout / 4
	}
	if s.receiptPoll <= 0 {
		s.receiptPoll = defaultReceiptPoll
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	where := "payments.rpc_url"
	if c.Endpoint != "" {
		where += " " + RedactURL(c.Endpoint)
	}
	ctx, cancel := context.WithTimeout(ctx, s.checkTimeout)
	defer cancel()
	cctx, ccancel := s.call(ctx)
	id, err := backend.ChainID(cctx)
	ccancel()
	if err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, s.timedOut(err), "cannot read the chain id (eth_chainId) from "+where)
	}
	if c.ChainID != nil && id.Cmp(c.ChainID) != 0 {
		return nil, sandboxd.Errorf(sandboxd.CodeInvalid, op, "%s serves chain %s, but payments.network is chain %s", where, id, c.ChainID)
	}
	cctx, ccancel = s.call(ctx)
	code, err := backend.CodeAt(cctx, c.Asset, nil)
	ccancel()
	if err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, s.timedOut(err), "cannot read the asset's code (eth_getCode) from "+where)
	}
	if len(code) == 0 {
		return nil, sandboxd.Errorf(sandboxd.CodeInvalid, op, "payments.asset %s has no contract code on chain %s", c.Asset.Hex(), id)
	}
	s.chainID, s.signer = id, types.LatestSignerForChainID(id)
	return s, nil
}

// Dial connects to c.Endpoint (payments.rpc_url) and returns a settler for
// req's asset with the relayer key in keyFile. Close disconnects. An
// endpoint that cannot be reached, is slow past c's RPC timeout or answers
// garbage fails here, with an error naming payments.rpc_url and its value.
// A nil c.Log discards the events.
func Dial(ctx context.Context, keyFile string, req x402.Requirements, c Config) (*Settler, error) {
	key, err := x402.LoadKey(keyFile)
	if err != nil {
		return nil, fmt.Errorf("payments.relayer_key_file: %w", err)
	}
	return dial(ctx, key, req, c)
}

// DialReader is Dial without a relayer key: a settler that reads the chain
// and simulates calls, for a seller whose facilitator sends the
// transactions (see NewReader).
func DialReader(ctx context.Context, req x402.Requirements, c Config) (*Settler, error) {
	return dial(ctx, nil, req, c)
}

// dial is Dial with key optional.
func dial(ctx context.Context, key *ecdsa.PrivateKey, req x402.Requirements, c Config) (*Settler, error) {
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	chainID, err := x402.ChainID(req.Network)
	if err != nil {
		return nil, fmt.Errorf("payments.network: %w", err)
	}
	r := newRedactor(c.Endpoint)
	dctx, cancel := context.WithTimeout(ctx, c.RPCTimeout)
	client, err := dialRPC(dctx, c.Endpoint)
	cancel()
	if err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, "payments.chain", r.err(err), "cannot connect to payments.rpc_url "+r.safe)
	}
	c.Asset, c.ChainID, c.Log = common.HexToAddress(req.Asset), chainID, log
	s, err := open(ctx, redactedClient{c: client, r: r}, key, c)
	if err != nil {
		client.Close()
		return nil, err
	}
	s.close = client.Close
	if key == nil {
		log.Info("reading the chain", "rpc", r.safe, "chain_id", s.chainID)
	} else {
		log.Info("settling on chain", "rpc", r.safe, "chain_id", s.chainID, "relayer", s.relayer.Hex())
	}
	return s, nil
}

// Relayer returns the relayer's address, the sender of every transaction;
// the zero address for a settler without a key.
func (s *Settler) Relayer() common.Address { return s.relayer }

// ChainID returns the chain's id, as the backend said it at start.
func (s *Settler) ChainID() *big.Int { return new(big.Int).Set(s.chainID) }

// Close disconnects a settler made by Dial.
func (s *Settler) Close() error {
	if s.close != nil {
		s.close()
	}
	return nil
}

// Check simulates the transfer from the relayer with eth_call. When the
// token refuses it (a revert), authorizationState and balanceOf say why;
// any other failure of the call is CodeUnavailable.
func (s *Settler) Check(ctx context.Context, p *x402.Payment) error {
	ctx, cancel := context.WithTimeout(ctx, s.checkTimeout)
	defer cancel()
	data, err := packTransfer(p.Transfer)
	if err != nil {
		return err
	}
	cctx, ccancel := s.call(ctx)
	_, err = s.backend.CallContract(cctx, ethereum.CallMsg{From: s.relayer, To: &s.asset, Data: data}, nil)
	ccancel()
	if err == nil {
		return nil
	}
	if !isRevert(err) {
		return s.unavailable("check the payment (eth_call)", err)
	}
	return s.diagnose(ctx, p.Transfer, err)
}

// Settle sends the transfer, waits for its receipt and requires success.
// A failure before the transaction may have reached the node wraps
// remote.ErrNotSent. When sending failed in a way that may have delivered it
// (a timeout, a garbled answer), Settle still waits for its receipt: a
// settlement that landed is a success, not a lost answer. A settler
// without a relayer key sends nothing: its error wraps ErrNoRelayerKey
// and remote.ErrNotSent.
func (s *Settler) Settle(ctx context.Context, p *x402.Payment) (string, error) {
	if s.key == nil {
		return "", s.noKey("settle the payment")
	}
	ctx, cancel := context.WithTimeout(ctx, s.settleTimeout)
	defer cancel()
	t := p.Transfer
	data, err := packTransfer(t)
	if err != nil {
		return "", fmt.Errorf("%w: %w", remote.ErrNotSent, err)
	}
	cctx, ccancel := s.call(ctx)
	gas, err := s.backend.EstimateGas(cctx, ethereum.CallMsg{From: s.relayer, To: &s.asset, Data: data})
	ccancel()
	if err != nil {
		if isRevert(err) {
			return "", s.diagnose(ctx, t, err)
		}
		return "", s.notSent("estimate the settlement's gas (eth_estimateGas)", err)
	}
	gas += gas * gasMarginPercent / 100
	log := s.log.With("payer", t.Payer(), "nonce", t.NonceHex())
	tx, err := s.sendRetry(ctx, log, s.asset, gas, data)
	if tx == nil {
		return "", s.notSent("send the settlement", err)
	}
	hash := tx.Hash().Hex()
	log = log.With("tx", hash, "relayer_nonce", tx.Nonce())
	if err != nil {
		log.Warn("sending the settlement failed after it may have reached the node; waiting for its receipt", "err", err)
	} else {
		log.Info("settlement sent")
	}
	st := newSentTx(tx)
	receipt, err := s.waitReceipt(ctx, log, st)
	if err != nil {
		hash = st.tx.Hash().Hex()
		log.Warn("settlement outcome unknown", "err", err, "latest_version", hash)
		return hash, sandboxd.Wrap(sandboxd.CodeUnavailable, "payments.chain", err, fmt.Sprintf(
			"the chain RPC failed after the settlement transaction %s was sent, so its outcome is unknown "+
				"and this payment cannot be used again; look the transaction up", hash))
	}
	hash = receipt.TxHash.Hex()
	if receipt.Status != types.ReceiptStatusSuccessful {
		log.Warn("settlement reverted", "block", receipt.BlockNumber)
		return hash, x402.Reject(x402.ReasonSettlementReverted, "the settlement transaction %s reverted", hash)
	}
	log.Info("settlement mined", "block", receipt.BlockNumber, "gas_used", receipt.GasUsed)
	return hash, nil
}

// NonceUsed reads authorizationState(from, nonce), from the pending state
// when the backend offers it.
func (s *Settler) NonceUsed(ctx context.Context, from common.Address, nonce [32]byte) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.checkTimeout)
	defer cancel()
	used, err := s.authorizationState(ctx, s.asset, from, nonce, true)
	if err != nil {
		return false, s.unavailable("read authorizationState (eth_call)", err)
	}
	return used, nil
}

// diagnose says why the token refused a transfer: nonce used, balance
// short, or (when neither) the token's own reason.
func (s *Settler) diagnose(ctx context.Context, t *x402.Transfer, cause error) error {
	if used, err := s.authorizationState(ctx, s.asset, t.From, t.Nonce, false); err == nil && used {
		return &x402.RejectError{Reason: x402.ReasonNonceUsed, Check: "this authorization was already used on chain", Err: cause}
	}
	if bal, err := s.balanceOf(ctx, s.asset, t.From); err == nil && bal.Cmp(t.Value) < 0 {
		return &x402.RejectError{Reason: x402.ReasonInsufficientFunds,
			Check: fmt.Sprintf("the payer's balance %s is below the value %s", x402.FormatPrice(bal), x402.FormatPrice(t.Value)), Err: cause}
	}
	msg := strings.ToLower(cause.Error())
	for _, r := range revertReasons {
		if strings.Contains(msg, r.text) {
			return &x402.RejectError{Reason: r.reason, Check: "the token refused the transfer: " + r.check, Err: cause}
		}
	}
	return &x402.RejectError{Reason: x402.ReasonTransactionState, Check: "the token refused the transfer", Err: cause}
}

// call bounds one RPC call by the per-call timeout, inside ctx's bound.
func (s *Settler) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.rpcTimeout)
}

// timedOut says, for the log, that a call ran out of time.
func (s *Settler) timedOut(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer in time (each call is bounded by %s): %w", s.rpcTimeout, err)
	}
	return err
}

// unavailable is the error of a chain RPC failure after which nothing was
// collected. Its message is shown to callers, so it names no URL (an RPC
// URL often holds an API key); the cause, for the log, has the details.
func (s *Settler) unavailable(what string, err error) error {
	return sandboxd.Wrap(sandboxd.CodeUnavailable, "payments.chain", s.timedOut(err),
		"the chain RPC failed to "+what+"; nothing was charged, so the same payment may be sent again later")
}

// notSent is unavailable for a settlement that failed before its
// transaction could have reached the node.
func (s *Settler) notSent(what string, err error) error {
	return sandboxd.Wrap(sandboxd.CodeUnavailable, "payments.chain", fmt.Errorf("%w: %w", remote.ErrNotSent, s.timedOut(err)),
		"the chain RPC failed to "+what+"; nothing was charged, so the same payment may be sent again later")
}

// isRevert reports whether the node answered that the call reverted (the
// token refused it), as opposed to failing, answering garbage or a JSON-RPC
// error of its own (rate limit, internal error), which say nothing about
// the payment.
func isRevert(err error) bool {
	var re rpc.Error
	if !errors.As(err, &re) {
		return false
	}
	return re.ErrorCode() == 3 || strings.Contains(strings.ToLower(re.Error()), "revert")
}
