package payer

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// ChannelPath is the path of the service's channel resource, where a
// refund is asked for (the official client's refund probes with GET, and
// the paid routes are POST).
const ChannelPath = "/v1/channel"

// Refunded is what a refund returned.
type Refunded struct {
	// ID is the channel's id.
	ID common.Hash
	// Amount is what the seller says was refunded, in atomic units.
	Amount *big.Int
	// Transaction is the refund's transaction hash, as reported.
	Transaction string
	// Network and Asset are the channel's.
	Network, Asset string
}

// Refund asks the service at serviceURL (any of its URLs: its origin is
// taken) for what is left of the key's channel with it: GET /v1/channel
// unpaid for its terms, whose batch-settlement entry names the channel,
// then again with a refund, the zero-charge voucher of the running total.
// A correction of the running total is adopted and asked again once, as
// Pay does. On success the channel is marked refunded, its balance less
// what came back.
func Refund(ctx context.Context, hc *http.Client, key *ecdsa.PrivateKey, statePath, serviceURL string) (*Refunded, error) {
	target := Origin(serviceURL) + ChannelPath
	first, err := x402.Send(ctx, hc, http.MethodGet, target, nil, "", "")
	if err != nil {
		return nil, err
	}
	if first.StatusCode != http.StatusPaymentRequired {
		return nil, fmt.Errorf("GET %s answered %d, not the 402 with terms a refund is asked under", target, first.StatusCode)
	}
	q, err := x402.ReadTerms(first)
	if err != nil {
		return nil, err
	}
	st, err := OpenStore(ctx, statePath)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	entry, ch, err := knownChannel(st, key, q)
	if err != nil {
		return nil, err
	}
	for retried := false; ; retried = true {
		chainID, err := x402.ChainID(ch.Network)
		if err != nil {
			return nil, err
		}
		sig, err := channel.SignVoucher(key, ch.ID, ch.Charged, chainID)
		if err != nil {
			return nil, err
		}
		p := channel.Payload{Kind: channel.KindRefund, Config: ch.Config,
			Voucher: channel.Voucher{ChannelID: ch.ID, MaxClaimableAmount: new(big.Int).Set(ch.Charged), Signature: sig}}
		resp, err := send(ctx, hc, http.MethodGet, target, nil, q.Resource, entry, p)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusPaymentRequired {
			return refunded(st, ch, entry, resp)
		}
		cq, ok := correction(resp)
		if !ok || retried {
			return nil, x402.Refused(resp)
		}
		proof, err := correctionOf(cq, key, ch)
		if err != nil {
			return nil, err
		}
		if err := adopt(st, ch, proof, cq.Error); err != nil {
			return nil, err
		}
	}
}

// knownChannel returns the first batch-settlement entry of q whose channel
// for key is in the state file, and that channel.
func knownChannel(st *Store, key *ecdsa.PrivateKey, q x402.Quote) (x402.Requirements, *Channel, error) {
	var ids []string
	for _, a := range q.Accepts {
		if q.Version != 2 || a.Scheme != channel.Scheme {
			continue
		}
		extra, err := channel.ParseExtra(a)
		if err != nil {
			continue
		}
		chainID, err := x402.ChainID(a.Network)
		if err != nil {
			continue
		}
		id, err := channel.ID(channel.NewConfig(key, a, extra, common.Hash{}), chainID)
		if err != nil {
			continue
		}
		if ch := st.Find(id); ch != nil {
			return a, ch, nil
		}
		ids = append(ids, id.Hex())
	}
	if len(ids) == 0 {
		return x402.Requirements{}, nil, fmt.Errorf("the server offers no batch-settlement channel (it offers %s)", offered(q))
	}
	return x402.Requirements{}, nil, fmt.Errorf("%s holds no channel of this key with this server (its terms name %s); "+
		"nothing to refund", st.path, strings.Join(ids, ", "))
}

// refunded takes the answer to a refund: a successful report's amount is
// what came back, and leaves the balance (never below the running total:
// nothing is left then); the channel is marked refunded.
func refunded(st *Store, ch *Channel, entry x402.Requirements, resp *x402.PaidResponse) (*Refunded, error) {
	r, err := readReport(resp)
	if err != nil {
		return nil, err
	}
	if r == nil || !r.Success {
		reason := "no PAYMENT-RESPONSE"
		if r != nil {
			reason = r.ErrorReason
		}
		return nil, fmt.Errorf("the refund of channel %s was not made (HTTP %d, %s)", ch.ID.Hex(), resp.StatusCode, reason)
	}
	amount, err := channel.ParseAmount("amount", r.Amount)
	if err != nil {
		return nil, fmt.Errorf("the refund of channel %s was reported made, but its amount does not read: %w", ch.ID.Hex(), err)
	}
	ch.State = StateRefunded
	if ch.Balance.Sub(ch.Balance, amount); ch.Balance.Cmp(ch.Charged) < 0 {
		ch.Balance.Set(ch.Charged)
	}
	ch.Updated = time.Now().UTC()
	if err := st.Save(); err != nil {
		return nil, err
	}
	return &Refunded{ID: ch.ID, Amount: amount, Transaction: r.Transaction, Network: ch.Network, Asset: entry.Asset}, nil
}
