package payer

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// Paid is the answer to a call made with Pay.
type Paid struct {
	*x402.PaidResponse
	// Channel says what a channel payment did; nil when the call was paid
	// exact or not at all.
	Channel *Receipt
}

// Receipt is what one call paid through a channel.
type Receipt struct {
	// ID is the channel's id, Payer its payer.
	ID    common.Hash
	Payer common.Address
	// Kind is what was sent: a deposit with its voucher, or a voucher.
	Kind channel.Kind
	// Deposit is the deposit's amount, nil for a voucher.
	Deposit *big.Int
	// Charged is what the seller says it charged for the call.
	Charged *big.Int
	// Total is the channel's running total after the call, Balance its
	// balance.
	Total, Balance *big.Int
	// Note, when set, says why the running total was not advanced.
	Note string
}

// Pay POSTs body (JSON) to url and, when the server answers 402, pays with
// key within policy: through a channel kept in the state file at
// statePath when policy.Scheme allows it and a batch-settlement entry
// passes the policy, else exact (x402.PayTerms). An answer other than 402
// is returned as is. Terms outside the policy, and a deposit over
// policy.MaxDeposit, are refused before anything is signed; a 402 to the
// paid request is a *x402.PaymentRefusedError, but for a correction of the
// running total proved by this key's own voucher, which is adopted and
// paid again once. The payment carries policy.Resend.PaymentID when the
// terms declare the payment-identifier extension, and a lost answer is
// asked for again with the same payment (x402.Resend.Send): for a channel
// the same voucher, the state file locked throughout, so that the running
// total advances once.
func Pay(ctx context.Context, hc *http.Client, key *ecdsa.PrivateKey, statePath, url string, body []byte, policy Policy) (*Paid, error) {
	first, err := x402.Send(ctx, hc, http.MethodPost, url, body, "", "")
	if err != nil {
		return nil, err
	}
	if first.StatusCode != http.StatusPaymentRequired {
		return &Paid{PaidResponse: first}, nil
	}
	q, err := x402.ReadTerms(first)
	if err != nil {
		return nil, err
	}
	entry, err := pickEntry(q, policy)
	if policy.Scheme == SchemeExact || (policy.Scheme == SchemeAuto && err != nil) {
		resp, err := x402.PayTerms(ctx, hc, key, url, body, q, policy.PayPolicy)
		if err != nil {
			return nil, err
		}
		return &Paid{PaidResponse: resp}, nil
	}
	if errors.Is(err, errNoChannel) {
		return nil, fmt.Errorf("refusing to pay, nothing was signed: the server offers no batch-settlement channel "+
			"(it offers %s), and --scheme batch-settlement pays through channels only: use --scheme auto or exact", offered(q))
	}
	if err != nil {
		return nil, err
	}
	c := &call{hc: hc, key: key, url: url, body: body, policy: policy}
	return c.pay(ctx, statePath, q, entry)
}

// call is one call paid through a channel.
type call struct {
	hc     *http.Client
	key    *ecdsa.PrivateKey
	url    string
	body   []byte
	policy Policy
}

// pay pays entry of q through the key's channel for it, holding the state
// file's lock throughout; a corrective 402 proved by this key's voucher is
// adopted and entry paid again, once.
func (c *call) pay(ctx context.Context, statePath string, q x402.Quote, entry x402.Requirements) (*Paid, error) {
	st, err := OpenStore(ctx, statePath)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	ch, err := c.channelFor(st, entry)
	if err != nil {
		return nil, err
	}
	for retried := false; ; retried = true {
		p, err := c.payment(ch, entry, time.Now())
		if err != nil {
			return nil, err
		}
		resp, err := c.send(ctx, q, entry, p)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusPaymentRequired {
			return settle(st, ch, entry, p, resp)
		}
		cq, ok := correction(resp)
		if !ok {
			return nil, x402.Refused(resp)
		}
		if retried {
			return nil, fmt.Errorf("the server corrected the running total of channel %s again (%s) after this payer "+
				"adopted its correction; stopping, nothing more was signed", ch.ID.Hex(), cq.Error)
		}
		proof, err := correctionOf(cq, c.key, ch)
		if err != nil {
			return nil, err
		}
		if err := adopt(st, ch, proof, cq.Error); err != nil {
			return nil, err
		}
		if resp.Resent > 0 {
			return nil, lostCharged(ch, cq.Error)
		}
	}
}

// lostCharged is the error of a voucher whose answer was lost and whose
// resend the server corrected (code), proving with this key's voucher that
// it charged the first: it keeps no answer to give again, and paying again
// would run the request a second time, which is the caller's choice.
func lostCharged(ch *Channel, code string) error {
	return fmt.Errorf("the answer to the paid request was lost, and the server answered its resend with a correction "+
		"(%s) proving it charged channel %s for it: it does not give answers again. The charge was taken into "+
		"the running total (now %s); nothing more was signed: run the request again to pay for a new answer",
		code, ch.ID.Hex(), ch.Charged)
}

// channelFor returns the channel paying entry, known or new (not saved
// until it pays). A server whose terms name another channel than the one
// it was paid through, while that one holds unspent money, is refused
// unless --pay-to names the new payee: its new deposit would strand the
// old one's.
func (c *call) channelFor(st *Store, entry x402.Requirements) (*Channel, error) {
	extra, err := channel.ParseExtra(entry)
	if err != nil {
		return nil, err
	}
	cfg := channel.NewConfig(c.key, entry, extra, common.Hash{})
	if err := channel.CheckConfig(cfg, entry); err != nil {
		return nil, fmt.Errorf("refusing to pay, nothing was signed: the channel's terms: %w", err)
	}
	chainID, err := x402.ChainID(entry.Network)
	if err != nil {
		return nil, err
	}
	id, err := channel.ID(cfg, chainID)
	if err != nil {
		return nil, err
	}
	server := Origin(c.url)
	if ch := st.Find(id); ch != nil {
		if ch.Config.PayerAuthorizer != crypto.PubkeyToAddress(c.key.PublicKey) {
			return nil, fmt.Errorf("channel %s of the state file is not signed for by this key", id.Hex())
		}
		ch.Server = server
		return ch, nil
	}
	if c.policy.PayTo == "" {
		if err := stranded(st, server, entry); err != nil {
			return nil, err
		}
	}
	ch := &Channel{ID: id, Network: x402.CanonicalNetwork(entry.Network), Server: server, Config: cfg,
		Charged: new(big.Int), Balance: new(big.Int), State: StateOpen}
	st.Channels = append(st.Channels, ch)
	return ch, nil
}

// stranded refuses a new channel with server (for entry) while an open one
// with it holds unspent money: a change of payee, asset, network, receiver
// authorizer or delay the payer did not name.
func stranded(st *Store, server string, entry x402.Requirements) error {
	for _, o := range st.Channels {
		if o.Server != server || o.State != StateOpen || o.Unspent().Sign() <= 0 {
			continue
		}
		return fmt.Errorf("refusing to pay, nothing was signed: %s was paid through channel %s (payee %s, asset %s on %s), "+
			"which holds %s unspent, and now names another channel (payee %s, asset %s on %s): a deposit into it would "+
			"leave the first one's money behind. Refund the first (sandboxd channel refund), or accept the new payee "+
			"with --pay-to %s", server, o.ID.Hex(), o.Config.Receiver.Hex(), o.Config.Token.Hex(), o.Network,
			x402.FormatPrice(o.Unspent()), entry.PayTo, entry.Asset, entry.Network, entry.PayTo)
	}
	return nil
}

// payment signs the payment of entry's price on ch: a voucher of the
// running total plus the price, after a deposit when the balance does not
// cover it, valid for the policy's window at most.
func (c *call) payment(ch *Channel, entry x402.Requirements, now time.Time) (channel.Payload, error) {
	price, _ := new(big.Int).SetString(entry.Amount, 10) // policy.Check read it
	max := new(big.Int).Add(ch.Charged, price)
	p := channel.Payload{Kind: channel.KindVoucher, Config: ch.Config}
	if need := new(big.Int).Sub(max, ch.Balance); need.Sign() > 0 {
		extra, err := channel.ParseExtra(entry)
		if err != nil {
			return p, err
		}
		amount, err := depositAmount(need, extra.MinDeposit, c.policy.MaxDeposit)
		if err != nil {
			return p, err
		}
		var salt common.Hash
		if _, err := rand.Read(salt[:]); err != nil {
			return p, err
		}
		window := time.Duration(c.policy.CapWindow(entry).MaxTimeoutSeconds) * time.Second
		if p.Deposit, err = channel.SignDeposit(c.key, entry, ch.Config, amount, now.Add(window), salt); err != nil {
			return p, err
		}
		p.Kind = channel.KindDeposit
	}
	chainID, err := x402.ChainID(ch.Network)
	if err != nil {
		return p, err
	}
	sig, err := channel.SignVoucher(c.key, ch.ID, max, chainID)
	if err != nil {
		return p, err
	}
	p.Voucher = channel.Voucher{ChannelID: ch.ID, MaxClaimableAmount: max, Signature: sig}
	return p, nil
}

// send POSTs the call's body with p, paying entry of q, in
// PAYMENT-SIGNATURE, with the payment id when q declares the extension,
// sends it again while its answer is lost (the policy's Resend), and reads
// the answer and its settlement report.
func (c *call) send(ctx context.Context, q x402.Quote, entry x402.Requirements, p channel.Payload) (*x402.PaidResponse, error) {
	r := c.policy.Resend
	payload := channel.BuildPayload(q.Resource, entry, p)
	req := x402.PaidRequest{Method: http.MethodPost, URL: c.url, Body: c.body, Header: x402.HeaderPaymentSignature}
	if ext := q.PaymentIDExtensions(r.PaymentID); ext != nil {
		payload.Extensions, req.PaymentID = ext, r.PaymentID
	}
	value, err := x402.EncodeHeader(payload)
	if err != nil {
		return nil, err
	}
	req.Value = value
	resp, err := r.Send(ctx, c.hc, req)
	return withSettlement(resp, err, entry)
}

// send sends p for entry in PAYMENT-SIGNATURE with body to target, once,
// and reads the answer and its settlement report.
func send(ctx context.Context, hc *http.Client, method, target string, body []byte, resource *x402.Resource, entry x402.Requirements, p channel.Payload) (*x402.PaidResponse, error) {
	value, err := x402.EncodeHeader(channel.BuildPayload(resource, entry, p))
	if err != nil {
		return nil, err
	}
	resp, err := x402.Send(ctx, hc, method, target, body, x402.HeaderPaymentSignature, value)
	return withSettlement(resp, err, entry)
}

// withSettlement completes resp, the answer to a payment of entry (or
// err, returned as is): the entry paid and the decoded settlement report.
func withSettlement(resp *x402.PaidResponse, err error, entry x402.Requirements) (*x402.PaidResponse, error) {
	if err != nil {
		return nil, err
	}
	resp.Requirements = &entry
	if resp.Settlement, err = x402.ReadSettlement(resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// Origin is the scheme://host[:port] of a URL, what the state file names a
// server by.
func Origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Scheme + "://" + u.Host
}
