package payments

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd/payments/internal/remote"
	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// channelParts are what channels need besides the ledger, resolved from
// the configuration at start: who authorizes claims and refunds, the
// escrow client, and how deposits are collected. why says, when they are
// nil, why channels are not offered (for the start-up log).
type channelParts struct {
	authorizer common.Address
	// key is the authorizer's key when this service holds it (the relayer,
	// or payments.channels.authorizer_key_file); nil when the facilitator
	// signs.
	key    *ecdsa.PrivateKey
	escrow escrow
	// depositor collects deposits; claims and refunds go the same way.
	depositor interface {
		CheckDeposit(ctx context.Context, p *x402.Payment, d *channel.Payload) error
	}
	closer io.Closer
	why    string
}

// supportedKind is one entry of a facilitator's /supported kinds.
type supportedKind struct {
	X402Version int    `json:"x402Version"`
	Scheme      string `json:"scheme"`
	Network     string `json:"network"`
	Extra       struct {
		ReceiverAuthorizer string `json:"receiverAuthorizer"`
	} `json:"extra"`
}

// facilitatorAuthorizer asks the facilitator's /supported for the receiver
// authorizer it advertises for batch-settlement on network; zero when it
// advertises none.
func facilitatorAuthorizer(ctx context.Context, base, network string, timeout time.Duration) (common.Address, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/supported", nil)
	if err != nil {
		return common.Address{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := (&http.Client{Transport: remote.Transport()}).Do(req)
	if err != nil {
		return common.Address{}, fmt.Errorf("the facilitator's /supported cannot be reached: %w", err)
	}
	defer resp.Body.Close()
	raw, err := remote.ReadAnswer(resp.Body, maxFacilitatorBody)
	if err != nil {
		return common.Address{}, fmt.Errorf("the facilitator's /supported: %w", err)
	}
	var out struct {
		Kinds []supportedKind `json:"kinds"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil {
		return common.Address{}, fmt.Errorf("the facilitator's /supported answered %d %q", resp.StatusCode, snippet(raw))
	}
	for _, k := range out.Kinds {
		a := k.Extra.ReceiverAuthorizer
		if k.Scheme == channel.Scheme && x402.CanonicalNetwork(k.Network) == network && common.IsHexAddress(a) &&
			common.HexToAddress(a) != (common.Address{}) {
			return common.HexToAddress(a), nil
		}
	}
	return common.Address{}, nil
}

// logChannels says at start whether channels are offered, and why not.
func logChannels(log *slog.Logger, cp channelParts, cfg Config) {
	if cp.escrow == nil {
		log.Info("channels not offered", "why", cp.why)
		return
	}
	source := "the relayer key"
	switch {
	case cfg.Settlement == SettleFacilitator && cp.key != nil:
		source = "payments.channels.authorizer_key_file"
	case cfg.Settlement == SettleFacilitator:
		source = "the facilitator's /supported"
	}
	log.Info("channels offered", "receiver_authorizer", cp.authorizer.Hex(), "source", source, "config", cfg.Channels.WithDefaults().String())
}

// keyAddress is the address of key.
func keyAddress(key *ecdsa.PrivateKey) common.Address { return crypto.PubkeyToAddress(key.PublicKey) }
