package payments

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
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"sandboxd"
)

// gasMarginPercent is added to the estimated gas of a settlement.
const gasMarginPercent = 20

// ChainBackend is what a ChainSettler needs of a chain client. Both
// *ethclient.Client and the client of ethclient/simulated have it.
type ChainBackend interface {
	bind.ContractBackend
	bind.DeployBackend
	ChainID(ctx context.Context) (*big.Int, error)
}

// pendingCaller is the optional pending-state call NonceUsed prefers, so a
// settlement still in the mempool counts as used.
type pendingCaller interface {
	PendingCallContract(ctx context.Context, call ethereum.CallMsg) ([]byte, error)
}

// ChainConfig configures a ChainSettler.
type ChainConfig struct {
	// Asset is the EIP-3009 token.
	Asset common.Address
	// ChainID, when set, must equal the backend's chain id.
	ChainID *big.Int
	// CheckTimeout bounds Check and NonceUsed; zero means DefaultVerifyTimeout.
	CheckTimeout time.Duration
	// SettleTimeout bounds Settle up to the receipt; zero means
	// DefaultSettleTimeout.
	SettleTimeout time.Duration
	// Log receives the settler's events; nil discards them.
	Log *slog.Logger
}

// ChainSettler settles payments itself: it sends transferWithAuthorization
// to the token from a relayer account that pays the gas.
type ChainSettler struct {
	backend       ChainBackend
	key           *ecdsa.PrivateKey
	relayer       common.Address
	asset         common.Address
	chainID       *big.Int
	signer        types.Signer
	checkTimeout  time.Duration
	settleTimeout time.Duration
	log           *slog.Logger
	close         func()

	// mu serializes the relayer's account nonces across concurrent
	// settlements; next is valid only when known is set.
	mu    sync.Mutex
	next  uint64
	known bool
}

var _ Settler = (*ChainSettler)(nil)

// NewChainSettler returns a settler sending from key's account through
// backend. It checks the chain id and that the asset has code.
func NewChainSettler(ctx context.Context, backend ChainBackend, key *ecdsa.PrivateKey, c ChainConfig) (*ChainSettler, error) {
	const op = "payments.chain"
	s := &ChainSettler{backend: backend, key: key, relayer: crypto.PubkeyToAddress(key.PublicKey), asset: c.Asset,
		checkTimeout: c.CheckTimeout, settleTimeout: c.SettleTimeout, log: c.Log}
	if s.checkTimeout <= 0 {
		s.checkTimeout = DefaultVerifyTimeout
	}
	if s.settleTimeout <= 0 {
		s.settleTimeout = DefaultSettleTimeout
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(ctx, s.checkTimeout)
	defer cancel()
	id, err := backend.ChainID(ctx)
	if err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "cannot read the chain id from payments.rpc_url")
	}
	if c.ChainID != nil && id.Cmp(c.ChainID) != 0 {
		return nil, sandboxd.Errorf(sandboxd.CodeInvalid, op, "payments.rpc_url serves chain %s, but payments.network is chain %s", id, c.ChainID)
	}
	code, err := backend.CodeAt(ctx, c.Asset, nil)
	if err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "cannot read the asset's code from payments.rpc_url")
	}
	if len(code) == 0 {
		return nil, sandboxd.Errorf(sandboxd.CodeInvalid, op, "payments.asset %s has no contract code on chain %s", c.Asset.Hex(), id)
	}
	s.chainID, s.signer = id, types.LatestSignerForChainID(id)
	return s, nil
}

// DialChainSettler connects to cfg.RPCURL and returns a settler for req's
// asset with the relayer key of cfg.RelayerKeyFile. Close disconnects.
func DialChainSettler(ctx context.Context, cfg Config, req Requirements, log *slog.Logger) (*ChainSettler, error) {
	key, err := LoadKey(cfg.RelayerKeyFile)
	if err != nil {
		return nil, fmt.Errorf("payments.relayer_key_file: %w", err)
	}
	chainID, err := ChainID(req.Network)
	if err != nil {
		return nil, fmt.Errorf("payments.network: %w", err)
	}
	client, err := ethclient.DialContext(ctx, cfg.RPCURL)
	if err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, "payments.chain", err, "cannot connect to payments.rpc_url "+cfg.RPCURL)
	}
	s, err := NewChainSettler(ctx, client, key, ChainConfig{Asset: common.HexToAddress(req.Asset), ChainID: chainID,
		CheckTimeout: cfg.verifyTimeout(), SettleTimeout: cfg.settleTimeout(), Log: log})
	if err != nil {
		client.Close()
		return nil, err
	}
	s.close = client.Close
	log.Info("payments: settling on chain", "rpc_url", cfg.RPCURL, "chain_id", s.chainID, "relayer", s.relayer.Hex())
	return s, nil
}

// Relayer returns the address that sends settlements and pays their gas.
func (s *ChainSettler) Relayer() common.Address { return s.relayer }

// Close disconnects a settler made by DialChainSettler.
func (s *ChainSettler) Close() error {
	if s.close != nil {
		s.close()
	}
	return nil
}

// Check simulates the transfer from the relayer with eth_call. When the
// token refuses it, authorizationState and balanceOf say why.
func (s *ChainSettler) Check(ctx context.Context, p *Payment) error {
	ctx, cancel := context.WithTimeout(ctx, s.checkTimeout)
	defer cancel()
	data, err := packTransfer(p.Transfer)
	if err != nil {
		return err
	}
	_, err = s.backend.CallContract(ctx, ethereum.CallMsg{From: s.relayer, To: &s.asset, Data: data}, nil)
	if err == nil {
		return nil
	}
	if !isNodeError(err) {
		return s.unavailable("check", err)
	}
	return s.diagnose(ctx, p.Transfer, err)
}

// Settle sends the transfer, waits for its receipt and requires success.
func (s *ChainSettler) Settle(ctx context.Context, p *Payment) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.settleTimeout)
	defer cancel()
	t := p.Transfer
	data, err := packTransfer(t)
	if err != nil {
		return "", err
	}
	gas, err := s.backend.EstimateGas(ctx, ethereum.CallMsg{From: s.relayer, To: &s.asset, Data: data})
	if err != nil {
		if isNodeError(err) {
			return "", s.diagnose(ctx, t, err)
		}
		return "", s.unavailable("estimate gas", err)
	}
	gas += gas * gasMarginPercent / 100
	log := s.log.With("payer", t.Payer(), "nonce", t.NonceHex())
	tx, err := s.sendRetry(ctx, log, gas, data)
	if err != nil {
		return "", s.unavailable("send", err)
	}
	hash := tx.Hash().Hex()
	log = log.With("tx", hash, "relayer_nonce", tx.Nonce())
	log.Info("payments: settlement sent")
	receipt, err := bind.WaitMined(ctx, s.backend, tx.Hash())
	if err != nil {
		return hash, s.unavailable("wait for the receipt", err)
	}
	if receipt.Status != types.ReceiptStatusSuccessful {
		log.Warn("payments: settlement reverted", "block", receipt.BlockNumber)
		return hash, reject(ReasonSettlementReverted, "the settlement transaction %s reverted", hash)
	}
	log.Info("payments: settlement mined", "block", receipt.BlockNumber, "gas_used", receipt.GasUsed)
	return hash, nil
}

// send prices, signs and sends one transaction. The relayer nonce is taken
// and advanced under a lock so concurrent settlements never share one; after
// a failed send it is fetched again from the pending state.
func (s *ChainSettler) send(ctx context.Context, gas uint64, data []byte) (*types.Transaction, error) {
	inner, err := s.fees(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.known {
		n, err := s.backend.PendingNonceAt(ctx, s.relayer)
		if err != nil {
			return nil, fmt.Errorf("relayer nonce: %w", err)
		}
		s.next, s.known = n, true
	}
	switch tx := inner.(type) {
	case *types.DynamicFeeTx:
		tx.ChainID, tx.Nonce, tx.Gas, tx.To, tx.Data = s.chainID, s.next, gas, &s.asset, data
	case *types.LegacyTx:
		tx.Nonce, tx.Gas, tx.To, tx.Data = s.next, gas, &s.asset, data
	}
	signed, err := types.SignNewTx(s.key, s.signer, inner)
	if err != nil {
		return nil, err
	}
	if err := s.backend.SendTransaction(ctx, signed); err != nil {
		s.known = false
		return nil, err
	}
	s.next++
	return signed, nil
}

// sendRetry is send, tried once more with a fresh relayer nonce when the
// node refused the first for its nonce (another sender used the relayer
// account). A retry cannot collect twice: the token accepts each
// authorization once.
func (s *ChainSettler) sendRetry(ctx context.Context, log *slog.Logger, gas uint64, data []byte) (*types.Transaction, error) {
	tx, err := s.send(ctx, gas, data)
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "nonce") {
		log.Warn("payments: relayer nonce was stale; retrying with the pending nonce", "err", err)
		tx, err = s.send(ctx, gas, data)
	}
	return tx, err
}

// fees returns an unsigned transaction body carrying the fee fields: an
// EIP-1559 one (tip plus twice the base fee) where the chain has a base
// fee, else a legacy one.
func (s *ChainSettler) fees(ctx context.Context) (types.TxData, error) {
	head, err := s.backend.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("latest header: %w", err)
	}
	if head.BaseFee == nil {
		price, err := s.backend.SuggestGasPrice(ctx)
		if err != nil {
			return nil, fmt.Errorf("gas price: %w", err)
		}
		return &types.LegacyTx{GasPrice: price}, nil
	}
	tip, err := s.backend.SuggestGasTipCap(ctx)
	if err != nil {
		return nil, fmt.Errorf("gas tip: %w", err)
	}
	feeCap := new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(2)))
	return &types.DynamicFeeTx{GasTipCap: tip, GasFeeCap: feeCap}, nil
}

// NonceUsed reads authorizationState(from, nonce), from the pending state
// when the backend offers it.
func (s *ChainSettler) NonceUsed(ctx context.Context, from common.Address, nonce [32]byte) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.checkTimeout)
	defer cancel()
	used, err := s.authorizationState(ctx, from, nonce, true)
	if err != nil {
		return false, s.unavailable("authorizationState", err)
	}
	return used, nil
}

// diagnose says why the token refused a transfer: nonce used, balance
// short, or (when neither) the token's own reason.
func (s *ChainSettler) diagnose(ctx context.Context, t *Transfer, cause error) error {
	if used, err := s.authorizationState(ctx, t.From, t.Nonce, false); err == nil && used {
		return &RejectError{Reason: ReasonNonceUsed, Check: "this authorization was already used on chain", Err: cause}
	}
	if bal, err := s.balanceOf(ctx, t.From); err == nil && bal.Cmp(t.Value) < 0 {
		return &RejectError{Reason: ReasonInsufficientFunds,
			Check: fmt.Sprintf("the payer's balance %s is below the value %s", FormatPrice(bal), FormatPrice(t.Value)), Err: cause}
	}
	msg := strings.ToLower(cause.Error())
	for _, r := range revertReasons {
		if strings.Contains(msg, r.text) {
			return &RejectError{Reason: r.reason, Check: "the token refused the transfer: " + r.check, Err: cause}
		}
	}
	return &RejectError{Reason: ReasonTransactionState, Check: "the token refused the transfer", Err: cause}
}

func (s *ChainSettler) authorizationState(ctx context.Context, from common.Address, nonce [32]byte, pending bool) (bool, error) {
	data, err := tokenABI.Pack("authorizationState", from, nonce)
	if err != nil {
		return false, err
	}
	msg := ethereum.CallMsg{To: &s.asset, Data: data}
	var out []byte
	if pc, ok := s.backend.(pendingCaller); ok && pending {
		out, err = pc.PendingCallContract(ctx, msg)
	} else {
		out, err = s.backend.CallContract(ctx, msg, nil)
	}
	if err != nil {
		return false, err
	}
	res, err := tokenABI.Unpack("authorizationState", out)
	if err != nil {
		return false, err
	}
	return res[0].(bool), nil
}

func (s *ChainSettler) balanceOf(ctx context.Context, who common.Address) (*big.Int, error) {
	data, err := tokenABI.Pack("balanceOf", who)
	if err != nil {
		return nil, err
	}
	out, err := s.backend.CallContract(ctx, ethereum.CallMsg{To: &s.asset, Data: data}, nil)
	if err != nil {
		return nil, err
	}
	res, err := tokenABI.Unpack("balanceOf", out)
	if err != nil {
		return nil, err
	}
	return res[0].(*big.Int), nil
}

func (s *ChainSettler) unavailable(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("timed out: %w", err)
	}
	return sandboxd.Wrap(sandboxd.CodeUnavailable, "payments.chain", err,
		fmt.Sprintf("the chain (id %s) could not %s; try again later", s.chainID, what))
}

// isNodeError reports whether the node answered with an error (a revert,
// a refused call) rather than not answering at all.
func isNodeError(err error) bool {
	var re rpc.Error
	var de rpc.DataError
	return errors.As(err, &re) || errors.As(err, &de)
}
