package x402

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"sandboxd/internal/jsonkeys"
)

// The x402 header names. HTTP header names are case-insensitive; these are
// the spellings the x402 documents use.
const (
	// HeaderPaymentRequired carries the v2 terms on a 402.
	HeaderPaymentRequired = "PAYMENT-REQUIRED"
	// HeaderPaymentSignature carries a v2 payment on the retry.
	HeaderPaymentSignature = "PAYMENT-SIGNATURE"
	// HeaderPaymentResponse carries a v2 settlement report.
	HeaderPaymentResponse = "PAYMENT-RESPONSE"
	// HeaderXPayment carries a v1 payment.
	HeaderXPayment = "X-PAYMENT"
	// HeaderXPaymentResponse carries a v1 settlement report.
	HeaderXPaymentResponse = "X-PAYMENT-RESPONSE"
	// HeaderIdempotentReplayed is "true" on a paid answer read back from
	// what the service kept of a first request's: a retry's, paid once.
	HeaderIdempotentReplayed = "Idempotent-Replayed"
)

// maxHeaderBytes bounds a payment header before decoding; a real one is
// well under 2 KB.
const maxHeaderBytes = 16 << 10

// DecodePaymentHeader finds and decodes the payment in h: PAYMENT-SIGNATURE
// (v2) first, else X-PAYMENT (v1). See DecodePayment.
func DecodePaymentHeader(h http.Header) (*Payment, error) {
	return DecodePayment(h.Get(HeaderPaymentSignature), h.Get(HeaderXPayment))
}

// DecodePayment decodes the payment of a request from its header values:
// signature (PAYMENT-SIGNATURE, v2) first, else xPayment (X-PAYMENT, v1).
// It returns (nil, nil) when both are empty, and a *HeaderError when the
// value is not base64 of a JSON payment object. The payload's own
// x402Version decides its shape, so a client that sends a v1 payload in the
// v2 header still decodes.
func DecodePayment(signature, xPayment string) (*Payment, error) {
	name, value := HeaderPaymentSignature, signature
	if value == "" {
		name, value = HeaderXPayment, xPayment
	}
	if value == "" {
		return nil, nil
	}
	p, err := decodePayment(value)
	if err != nil {
		return nil, &HeaderError{Header: name, Err: err}
	}
	return p, nil
}

// HeaderError is the error of a payment header that does not decode: the
// header's name and why.
type HeaderError struct {
	// Header is the name of the header that was read.
	Header string
	// Err says why it does not decode.
	Err error
}

// Error implements the error interface.
func (e *HeaderError) Error() string {
	return fmt.Sprintf("the %s header does not decode: %v", e.Header, e.Err)
}

// Unwrap returns the cause.
func (e *HeaderError) Unwrap() error { return e.Err }

// decodePayment decodes one header value into a Payment. It reads the
// payment one way only: a key named twice in any letter case, at any depth,
// or a key the x402 schema does not have where it is closed, is refused
// (see checkKeys), so every reader of the JSON sees the payment verified.
func decodePayment(value string) (*Payment, error) {
	if len(value) > maxHeaderBytes {
		return nil, fmt.Errorf("%d bytes, over the limit of %d", len(value), maxHeaderBytes)
	}
	raw, err := decodeBase64(value)
	if err != nil {
		return nil, err
	}
	// One reading picks the version and, for v2, the scheme, whose shape
	// is then decoded strictly.
	var probe struct {
		X402Version *int            `json:"x402Version"`
		Accepted    json.RawMessage `json:"accepted"`
	}
	if err := checkKeys(raw, nil); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if probe.X402Version == nil {
		return nil, errors.New("no x402Version field")
	}
	p := &Payment{Version: *probe.X402Version}
	if p.Version == 1 {
		var v1 PaymentPayloadV1
		if err := DecodeStrict(raw, paymentV1Shape, &v1); err != nil {
			return nil, fmt.Errorf("not a v1 payment: %w", err)
		}
		p.Scheme, p.Network, p.Exact = v1.Scheme, v1.Network, v1.Payload
		return p, nil
	}
	var accepted struct {
		Scheme string `json:"scheme"`
	}
	if json.Unmarshal(probe.Accepted, &accepted) == nil && accepted.Scheme == SchemeBatchSettlement {
		return decodeRaw(raw, p)
	}
	var v2 PaymentPayload
	if err := DecodeStrict(raw, paymentV2Shape, &v2); err != nil {
		return nil, fmt.Errorf("not a v2 payment: %w", err)
	}
	p.Scheme, p.Network, p.Exact = v2.Accepted.Scheme, v2.Accepted.Network, v2.Payload
	p.Accepted, p.Resource, p.Extensions = &v2.Accepted, v2.Resource, v2.Extensions
	return p, nil
}

// decodeRaw decodes a v2 payment of a scheme whose payload its own package
// reads (SchemeBatchSettlement): the payload is kept as sent in p.Raw.
func decodeRaw(raw []byte, p *Payment) (*Payment, error) {
	var v2 struct {
		Resource   *Resource                  `json:"resource,omitempty"`
		Accepted   Requirements               `json:"accepted"`
		Payload    json.RawMessage            `json:"payload"`
		Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
	}
	if err := DecodeStrict(raw, paymentRawShape, &v2); err != nil {
		return nil, fmt.Errorf("not a v2 payment: %w", err)
	}
	if len(v2.Payload) == 0 {
		return nil, errors.New("not a v2 payment: no payload")
	}
	p.Scheme, p.Network, p.Raw = v2.Accepted.Scheme, v2.Accepted.Network, v2.Payload
	p.Accepted, p.Resource, p.Extensions = &v2.Accepted, v2.Resource, v2.Extensions
	return p, nil
}

// decodeBase64 accepts standard base64 (what the official clients send)
// with or without padding, and the URL-safe alphabet.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// EncodeHeader returns v as base64 of its JSON, the encoding of every x402
// header.
func EncodeHeader(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// DecodeHeader decodes an x402 header value (base64 of JSON) into v; a
// value nested deeper than jsonkeys.MaxDepth is refused before it is
// decoded.
func DecodeHeader(value string, v any) error {
	raw, err := decodeBase64(value)
	if err != nil {
		return err
	}
	if e := jsonkeys.CheckDepth(raw, jsonkeys.MaxDepth); e != nil {
		return e
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return nil
}

// SettleReport returns the header name and the report r as a payer of the
// given version reads them: PAYMENT-RESPONSE for v2, X-PAYMENT-RESPONSE
// with the v1 network name for v1.
func SettleReport(version int, r SettleResponse) (string, SettleResponse) {
	if version == 1 {
		r.Network = V1Network(r.Network)
		return HeaderXPaymentResponse, r
	}
	return HeaderPaymentResponse, r
}
