package payments

import (
	"context"
	"errors"

	"github.com/ethereum/go-ethereum/common"
)

// ErrNonceStateUnknown is returned by NonceUsed when the settler cannot
// tell whether an authorization was used (a facilitator offers no such
// query). Recover leaves such rows reserved and logs them.
var ErrNonceStateUnknown = errors.New("the settler cannot tell whether this nonce was used")

// Settler checks payments against the chain's state and collects them.
//
// Check is called after Verify, before the run. It returns:
//   - nil when the payment would settle now (the nonce is unused and the
//     payer's balance covers the value);
//   - a *RejectError when it would not: ReasonNonceUsed, ReasonInsufficientFunds,
//     or another x402 code (a facilitator's invalidReason);
//   - a CodeUnavailable *sandboxd.Error when the chain or the facilitator
//     cannot be reached (its Message names the URL), or ctx's error.
//
// Settle collects a checked payment, once, and returns the transaction hash.
// It returns:
//   - the hash and nil when the transfer is on chain with a successful receipt;
//   - a *RejectError when it was refused or reverted (the hash, when a
//     transaction was sent, is returned with it);
//   - a CodeUnavailable *sandboxd.Error when the chain or the facilitator
//     cannot be reached or did not answer in time; if a transaction was sent
//     its hash comes back too and its outcome is unknown;
//   - ctx's error.
//
// NonceUsed reports whether (from, nonce) was used on chain, including by a
// transaction still pending; Recover calls it for rows a crash left
// reserved. It returns ErrNonceStateUnknown when the settler cannot tell,
// or a CodeUnavailable *sandboxd.Error when the chain cannot be reached.
type Settler interface {
	Check(ctx context.Context, p *Payment) error
	Settle(ctx context.Context, p *Payment) (txHash string, err error)
	NonceUsed(ctx context.Context, from common.Address, nonce [32]byte) (bool, error)
}
