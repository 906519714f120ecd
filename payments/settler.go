package payments

import (
	"context"
	"errors"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/x402"
)

// errNonceStateUnknown is returned by NonceUsed when the settler cannot
// tell whether an authorization was used (a facilitator offers no such
// query). Recover marks such rows failed when a settlement was in flight.
var errNonceStateUnknown = errors.New("the settler cannot tell whether this nonce was used")

// errSettleNotSent marks a Settle failure that happened before anything
// able to collect the payment left the service: no transaction reached the
// chain, no /settle request reached the facilitator (the connection was
// refused, or the node refused the transaction). The charge then releases
// the payment: nobody was charged, and the same payment may be offered
// again. A failure that may have come after the settlement left (a timeout,
// a garbled answer) never carries it.
var errSettleNotSent = errors.New("the settlement was not sent")

// Settler checks payments against the chain's state and collects them.
//
// Check is called after x402.Verify, before the run. It returns:
//   - nil when the payment would settle now (the nonce is unused and the
//     payer's balance covers the value);
//   - a *x402.RejectError when it would not: ReasonNonceUsed, ReasonInsufficientFunds,
//     or another x402 code (a facilitator's invalidReason);
//   - a CodeUnavailable *sandboxd.Error when the chain or the facilitator
//     cannot be reached (its Message names the URL), or ctx's error.
//
// Settle collects a checked payment, once, and returns the transaction hash.
// It returns:
//   - the hash and nil when the transfer is on chain with a successful receipt;
//   - a *x402.RejectError when it was refused or reverted (the hash, when a
//     transaction was sent, is returned with it);
//   - a CodeUnavailable *sandboxd.Error wrapping errSettleNotSent when the
//     chain or the facilitator failed before the settlement was sent;
//   - a CodeUnavailable *sandboxd.Error without it when they failed or did
//     not answer in time after it may have been sent: its outcome is
//     unknown (the hash, when a transaction was sent, comes back too);
//   - ctx's error.
//
// NonceUsed reports whether (from, nonce) was used on chain, including by a
// transaction still pending; Recover calls it for rows a crash left in
// settlement. It returns errNonceStateUnknown when the settler cannot tell,
// or a CodeUnavailable *sandboxd.Error when the chain cannot be reached.
type Settler interface {
	Check(ctx context.Context, p *x402.Payment) error
	Settle(ctx context.Context, p *x402.Payment) (txHash string, err error)
	NonceUsed(ctx context.Context, from common.Address, nonce [32]byte) (bool, error)
}
