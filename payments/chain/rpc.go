package chain

import (
	"context"
	"math/big"
	"net/http"
	"net/url"
	"strings"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"sandboxd/payments/internal/remote"
)

// RedactURL is what may be said of an RPC URL in logs and messages: its
// scheme and host at most. Providers put API keys in the path, the query or
// the userinfo, so those are never shown.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "the configured RPC"
	}
	return u.Scheme + "://" + u.Host
}

// redactor removes an RPC URL's secret parts from error text.
type redactor struct {
	raw, safe string
	secrets   []string
}

// newRedactor returns a redactor for the RPC URL raw.
func newRedactor(raw string) redactor {
	r := redactor{raw: raw, safe: RedactURL(raw)}
	if u, err := url.Parse(raw); err == nil {
		for _, s := range []string{u.User.String(), u.EscapedPath(), u.Path, u.RawQuery, u.Query().Encode(), u.Fragment} {
			if len(s) >= 3 {
				r.secrets = append(r.secrets, s)
			}
		}
	}
	return r
}

// text returns s without the URL's secret parts.
func (r redactor) text(s string) string {
	if r.raw == "" {
		return s
	}
	s = strings.ReplaceAll(s, r.raw, r.safe)
	for _, secret := range r.secrets {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	return s
}

// err returns err with its text redacted; errors.Is and errors.As still
// see the original chain.
func (r redactor) err(err error) error {
	if err == nil {
		return nil
	}
	if msg := r.text(err.Error()); msg != err.Error() {
		return &redactedError{msg: msg, err: err}
	}
	return err
}

// redactedError is an error whose text had secrets removed.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactedClient is an ethclient whose errors never carry the RPC URL's
// secret parts (net/http puts the whole URL in every transport error), so
// nothing the settler logs or answers can leak an API key.
type redactedClient struct {
	c *ethclient.Client
	r redactor
}

// The settler's optional interfaces too: without them it would quietly
// stop preferring pending state or bumping stuck transactions.
var (
	_ Backend       = redactedClient{}
	_ pendingCaller = redactedClient{}
	_ nonceReader   = redactedClient{}
)

func (b redactedClient) ChainID(ctx context.Context) (*big.Int, error) {
	v, err := b.c.ChainID(ctx)
	return v, b.r.err(err)
}

func (b redactedClient) CodeAt(ctx context.Context, a common.Address, n *big.Int) ([]byte, error) {
	v, err := b.c.CodeAt(ctx, a, n)
	return v, b.r.err(err)
}

func (b redactedClient) CallContract(ctx context.Context, m ethereum.CallMsg, n *big.Int) ([]byte, error) {
	v, err := b.c.CallContract(ctx, m, n)
	return v, b.r.err(err)
}

func (b redactedClient) PendingCallContract(ctx context.Context, m ethereum.CallMsg) ([]byte, error) {
	v, err := b.c.PendingCallContract(ctx, m)
	return v, b.r.err(err)
}

func (b redactedClient) EstimateGas(ctx context.Context, m ethereum.CallMsg) (uint64, error) {
	v, err := b.c.EstimateGas(ctx, m)
	return v, b.r.err(err)
}

func (b redactedClient) SuggestGasPrice(ctx context.Context) (*big.Int, error) {
	v, err := b.c.SuggestGasPrice(ctx)
	return v, b.r.err(err)
}

func (b redactedClient) SuggestGasTipCap(ctx context.Context) (*big.Int, error) {
	v, err := b.c.SuggestGasTipCap(ctx)
	return v, b.r.err(err)
}

func (b redactedClient) SendTransaction(ctx context.Context, tx *types.Transaction) error {
	return b.r.err(b.c.SendTransaction(ctx, tx))
}

func (b redactedClient) HeaderByNumber(ctx context.Context, n *big.Int) (*types.Header, error) {
	v, err := b.c.HeaderByNumber(ctx, n)
	return v, b.r.err(err)
}

func (b redactedClient) PendingCodeAt(ctx context.Context, a common.Address) ([]byte, error) {
	v, err := b.c.PendingCodeAt(ctx, a)
	return v, b.r.err(err)
}

func (b redactedClient) PendingNonceAt(ctx context.Context, a common.Address) (uint64, error) {
	v, err := b.c.PendingNonceAt(ctx, a)
	return v, b.r.err(err)
}

func (b redactedClient) NonceAt(ctx context.Context, a common.Address, n *big.Int) (uint64, error) {
	v, err := b.c.NonceAt(ctx, a, n)
	return v, b.r.err(err)
}

func (b redactedClient) FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error) {
	v, err := b.c.FilterLogs(ctx, q)
	return v, b.r.err(err)
}

func (b redactedClient) SubscribeFilterLogs(ctx context.Context, q ethereum.FilterQuery, ch chan<- types.Log) (ethereum.Subscription, error) {
	v, err := b.c.SubscribeFilterLogs(ctx, q, ch)
	return v, b.r.err(err)
}

func (b redactedClient) TransactionReceipt(ctx context.Context, h common.Hash) (*types.Receipt, error) {
	v, err := b.c.TransactionReceipt(ctx, h)
	return v, b.r.err(err)
}

func (b redactedClient) TransactionByHash(ctx context.Context, h common.Hash) (*types.Transaction, bool, error) {
	tx, pending, err := b.c.TransactionByHash(ctx, h)
	return tx, pending, b.r.err(err)
}

// maxRPCAnswer bounds one answer of the RPC node. The largest the service
// asks for are a Multicall3 read of 100 channels and the receipt of a claim
// of 100 rows, each about 100 KB of JSON; a node streaming far more is
// refused rather than buffered for as long as the call's timeout lets it
// talk.
const maxRPCAnswer = 4 << 20

// dialRPC connects to the node at url with every answer bounded: over
// HTTP by boundedTransport, over WebSocket by the message size limit.
func dialRPC(ctx context.Context, url string) (*ethclient.Client, error) {
	hc := &http.Client{Transport: remote.BoundedTransport{Base: remote.Transport(), Limit: maxRPCAnswer}}
	c, err := rpc.DialOptions(ctx, url, rpc.WithHTTPClient(hc), rpc.WithWebsocketMessageSizeLimit(maxRPCAnswer))
	if err != nil {
		return nil, err
	}
	return ethclient.NewClient(c), nil
}
