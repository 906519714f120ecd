package x402

import (
	"encoding/json"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
)

// The x402 schemes taken.
const (
	// SchemeExact is a fixed price paid with an EIP-3009
	// transferWithAuthorization.
	SchemeExact = "exact"
	// SchemeBatchSettlement pays from a channel's deposit with vouchers
	// (package x402/channel decodes and verifies it).
	SchemeBatchSettlement = "batch-settlement"
)

// mimeJSON is the media type of the paid answer, quoted in the terms.
const mimeJSON = "application/json"

// Resource describes the paid resource in v2 terms and payloads.
type Resource struct {
	// URL is the public URL of the call.
	URL string `json:"url"`
	// Description says what the caller pays for.
	Description string `json:"description"`
	// MimeType is the media type of the answer.
	MimeType string `json:"mimeType"`
}

// Extra carries the EIP-712 domain of the asset, without which no signature
// can be checked. x402 leaves extra open: members other than name and
// version are kept as received (rest), so a payment re-encodes to what the
// payer sent, and Extra stays comparable.
type Extra struct {
	// Name is the token's EIP-712 domain name ("USDC" on Base Sepolia).
	Name string `json:"name"`
	// Version is the token's EIP-712 domain version ("2" for USDC).
	Version string `json:"version"`
	// rest is the other members as a compact JSON object, "" when none.
	rest string
}

// Requirements is one v2 "accepts" entry: what a payment must be.
type Requirements struct {
	// Scheme is always SchemeExact here.
	Scheme string `json:"scheme"`
	// Network is a CAIP-2 id such as "eip155:84532".
	Network string `json:"network"`
	// Amount is the price in the asset's atomic units, as a decimal string.
	Amount string `json:"amount"`
	// Asset is the token contract's address.
	Asset string `json:"asset"`
	// PayTo is the address that receives the payment.
	PayTo string `json:"payTo"`
	// MaxTimeoutSeconds bounds how long a settlement may take.
	MaxTimeoutSeconds int `json:"maxTimeoutSeconds"`
	// Extra is the asset's EIP-712 domain.
	Extra Extra `json:"extra"`
}

// PaymentRequired is the v2 terms object, sent base64-encoded in the
// PAYMENT-REQUIRED header.
type PaymentRequired struct {
	// X402Version is 2.
	X402Version int `json:"x402Version"`
	// Error says why payment is asked for.
	Error string `json:"error,omitempty"`
	// Resource describes the paid call.
	Resource Resource `json:"resource"`
	// Accepts lists the ways to pay; here exactly one.
	Accepts []Requirements `json:"accepts"`
	// Extensions is always present, empty here.
	Extensions map[string]any `json:"extensions"`
}

// RequirementsV1 is one v1 "accepts" entry; it folds the resource into the
// entry and names the price maxAmountRequired.
type RequirementsV1 struct {
	// Scheme is always SchemeExact here.
	Scheme string `json:"scheme"`
	// Network is a v1 network name such as "base-sepolia".
	Network string `json:"network"`
	// MaxAmountRequired is the price in atomic units.
	MaxAmountRequired string `json:"maxAmountRequired"`
	// Resource is the public URL of the call.
	Resource string `json:"resource"`
	// Description says what the caller pays for.
	Description string `json:"description"`
	// MimeType is the media type of the answer.
	MimeType string `json:"mimeType"`
	// PayTo is the address that receives the payment.
	PayTo string `json:"payTo"`
	// MaxTimeoutSeconds bounds how long a settlement may take.
	MaxTimeoutSeconds int `json:"maxTimeoutSeconds"`
	// Asset is the token contract's address.
	Asset string `json:"asset"`
	// Extra is the asset's EIP-712 domain.
	Extra Extra `json:"extra"`
}

// PaymentRequiredV1 is the v1 terms object, sent as the body of a 402.
type PaymentRequiredV1 struct {
	// X402Version is 1.
	X402Version int `json:"x402Version"`
	// Error says why payment is asked for.
	Error string `json:"error"`
	// Accepts lists the ways to pay; here exactly one.
	Accepts []RequirementsV1 `json:"accepts"`
}

// Authorization is an EIP-3009 TransferWithAuthorization as it travels on
// the wire: every number a decimal string, addresses and nonce in hex.
type Authorization struct {
	// From is the payer's address.
	From string `json:"from"`
	// To is the payee's address; it must equal the terms' payTo.
	To string `json:"to"`
	// Value is the amount in atomic units; it must equal the price.
	Value string `json:"value"`
	// ValidAfter is the Unix time from which the authorization may be used.
	ValidAfter string `json:"validAfter"`
	// ValidBefore is the Unix time at which the authorization expires.
	ValidBefore string `json:"validBefore"`
	// Nonce is 32 random bytes that make the authorization single-use.
	Nonce string `json:"nonce"`
}

// ExactPayload is the scheme-specific part of a payment: the authorization
// and the payer's 65-byte signature over it, in hex.
type ExactPayload struct {
	// Signature is r || s || v in 0x-prefixed hex.
	Signature string `json:"signature"`
	// Authorization is what was signed.
	Authorization Authorization `json:"authorization"`
}

// PaymentPayload is the v2 payment, sent base64-encoded in the
// PAYMENT-SIGNATURE header.
type PaymentPayload struct {
	// X402Version is 2.
	X402Version int `json:"x402Version"`
	// Resource echoes the resource of the terms.
	Resource *Resource `json:"resource,omitempty"`
	// Accepted echoes the chosen terms entry.
	Accepted Requirements `json:"accepted"`
	// Payload is the signed authorization.
	Payload ExactPayload `json:"payload"`
	// Extensions carries optional protocol extensions, each kept as sent.
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

// PaymentPayloadV1 is the v1 payment, sent base64-encoded in the X-PAYMENT
// header.
type PaymentPayloadV1 struct {
	// X402Version is 1.
	X402Version int `json:"x402Version"`
	// Scheme is the chosen scheme.
	Scheme string `json:"scheme"`
	// Network is a v1 network name.
	Network string `json:"network"`
	// Payload is the signed authorization.
	Payload ExactPayload `json:"payload"`
}

// SettleResponse reports a settlement, sent base64-encoded in the
// PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE (v1) header, and answered by a
// facilitator's /settle.
type SettleResponse struct {
	// Success reports that the payment was collected.
	Success bool `json:"success"`
	// ErrorReason is the x402 error code when Success is false.
	ErrorReason string `json:"errorReason,omitempty"`
	// Transaction is the settlement's transaction hash ("" when none).
	Transaction string `json:"transaction"`
	// Network is the network settled on, named as the payer named it.
	Network string `json:"network"`
	// Payer is the paying address.
	Payer string `json:"payer,omitempty"`
	// Amount is what the settlement moved in atomic units, for a scheme
	// that reports it (batch-settlement: a deposit's amount).
	Amount string `json:"amount,omitempty"`
	// Extra is the scheme's report (batch-settlement: chargedAmount and
	// channelState).
	Extra json.RawMessage `json:"extra,omitempty"`
}

// Transfer is a verified authorization with typed fields, ready to settle.
type Transfer struct {
	// From is the payer, To the payee.
	From, To common.Address
	// Value is the amount in atomic units.
	Value *big.Int
	// ValidAfter and ValidBefore bound the authorization's validity (Unix s).
	ValidAfter, ValidBefore *big.Int
	// Nonce makes the authorization single-use.
	Nonce [32]byte
	// Signature is 65 bytes, r || s || v, with v normalized to 27 or 28 as
	// the token's ecrecover expects.
	Signature []byte
}

// Payer is the payer's address in lower case, the ledger's spelling.
func (t *Transfer) Payer() string { return strings.ToLower(t.From.Hex()) }

// NonceHex is the nonce as lower-case 0x-prefixed hex, the ledger's spelling.
func (t *Transfer) NonceHex() string { return strings.ToLower(common.Hash(t.Nonce).Hex()) }

// Payment is a decoded payment header. Verify fills in Transfer and
// Requirements; after that it is what the settlers and the ledger work on.
type Payment struct {
	// Version is 1 (X-PAYMENT) or 2 (PAYMENT-SIGNATURE).
	Version int
	// Scheme and Network are as the payer sent them (Network may be a v1 name).
	Scheme  string
	Network string
	// Accepted is the terms entry a v2 payer echoed; nil for v1. Verify
	// requires it equal to the quote; it is never forwarded.
	Accepted *Requirements
	// Resource is the resource a v2 payer echoed; nil for v1. It is
	// never forwarded (Quoted.Resource is).
	Resource *Resource
	// Exact is the signed authorization as sent; a facilitator gets
	// Transfer.Exact, its re-encoding.
	Exact ExactPayload
	// Extensions are the extensions a v2 payer sent, each kept as sent.
	// They are never forwarded (Quoted.Extensions are).
	Extensions map[string]json.RawMessage
	// Raw is the payload as sent for a scheme whose own package decodes it
	// (SchemeBatchSettlement: x402/channel.Decode); Exact is then empty.
	Raw json.RawMessage

	// Transfer is the authorization parsed and checked by Verify.
	Transfer *Transfer
	// Requirements are this server's terms the payment was checked against.
	Requirements Requirements
	// Quoted is this server's own resource and the extensions it declared
	// for the request the payment came with, set by the gate. With
	// Requirements and Transfer it is what a facilitator gets: never the
	// payer's copies (Accepted, Resource, Extensions, Exact).
	Quoted Quoted
}

// Quoted is what a server quoted for one request besides the terms entry:
// the resource and the declared extensions (bazaar discovery), each kept
// as its JSON.
type Quoted struct {
	// Resource describes the paid resource.
	Resource Resource
	// Extensions are the x402 extensions the server declared, by name.
	Extensions map[string]json.RawMessage
}
