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

	"sandboxd"
	"sandboxd/payments/chain"
	"sandboxd/payments/channels"
	"sandboxd/payments/internal/remote"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// channelParts are what channels need besides the ledger, resolved from
// the configuration at start: who authorizes claims and refunds, the
// escrow client, how deposits are collected and how claims and refunds are
// sent. why says, when escrow is nil, why channels are not offered.
type channelParts struct {
	authorizer common.Address
	// key is the authorizer's key when this service holds it (the relayer,
	// or payments.channels.authorizer_key_file); nil when the facilitator
	// signs.
	key       *ecdsa.PrivateKey
	escrow    escrow
	depositor channels.Depositor
	refunder  channels.Refunder
	claimer   channels.Claimer
	// closer releases the escrow client when it was dialed for channels.
	closer io.Closer
	why    string
}

// channelPartsOf resolves the channel parts of cfg (see offerChannels).
func channelPartsOf(ctx context.Context, cfg Config, req x402.Requirements, settler Settler, log *slog.Logger) (channelParts, error) {
	cp := channelParts{closer: io.NopCloser(nil)}
	var reader *chain.Settler
	switch s := settler.(type) {
	case *chain.Settler:
		reader = s
	case *facilitatorSettler:
		r, err := chain.DialReader(ctx, req, cfg.chainConfig(log))
		if err != nil {
			return cp, err
		}
		reader, cp.closer = r, r
	default:
		cp.why = "the settler is neither the relayer nor a facilitator"
		return cp, nil
	}
	deployed, err := reader.EscrowDeployed(ctx)
	if err != nil {
		return cp, err
	}
	if !deployed {
		cp.why = fmt.Sprintf("the batch-settlement escrow (%s), its deposit collector or Multicall3 has no code on %s",
			channel.Escrow.Hex(), req.Network)
		return cp, nil
	}
	chainID := reader.ChainID()
	if f, ok := settler.(*facilitatorSettler); ok {
		if cfg.Channels.AuthorizerKeyFile != "" {
			key, err := x402.LoadKey(cfg.Channels.AuthorizerKeyFile)
			if err != nil {
				return cp, fmt.Errorf("payments.channels.authorizer_key_file: %w", err)
			}
			cp.key, cp.authorizer = key, keyAddress(key)
		} else {
			a, err := facilitatorAuthorizer(ctx, cfg.FacilitatorURL, req.Network, cfg.verifyTimeout())
			if err != nil {
				return cp, err
			}
			if a == (common.Address{}) {
				cp.why = "the facilitator's /supported advertises no receiverAuthorizer for batch-settlement on " + req.Network +
					"; set payments.channels.authorizer_key_file to claim with a key of your own"
				return cp, nil
			}
			cp.authorizer = a
		}
		fc := facilitatorClaimer{f: f, network: req.Network, asset: common.HexToAddress(req.Asset),
			payTo: common.HexToAddress(req.PayTo), key: cp.key, chainID: chainID}
		cp.escrow, cp.depositor, cp.claimer, cp.refunder = reader, facilitatorDepositor{f: f, e: reader}, fc, facilitatorRefunder{c: fc}
		return cp, nil
	}
	cp.authorizer = reader.Relayer()
	cp.escrow, cp.depositor, cp.claimer, cp.refunder = reader, chainDepositor{e: reader}, reader, chainRefunder{s: reader}
	return cp, nil
}

// background is the mirror and the claimer of the parts on led, for the
// service (offerChannels) and for a pass run by hand (ClaimNow) alike.
func (cp channelParts) background(cfg Config, req x402.Requirements, led *ledger.SQL, log *slog.Logger) *channels.Background {
	return channels.NewBackground(channels.BackgroundOptions{Books: led, Reader: cp.escrow, Claimer: cp.claimer,
		Config: cfg.Channels, Receiver: common.HexToAddress(req.PayTo), Token: common.HexToAddress(req.Asset),
		Observe: cfg.ChannelObserver, Gauges: cfg.ChannelGauges, Log: log})
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

// sandboxdMessage is err's message for a person.
func sandboxdMessage(err error) string { return sandboxd.ErrorMessage(err) }

// keyAddress is the address of key.
func keyAddress(key *ecdsa.PrivateKey) common.Address { return crypto.PubkeyToAddress(key.PublicKey) }
