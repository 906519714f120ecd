package x402

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// maxAnswerBytes bounds an answer the client reads.
const maxAnswerBytes = 16 << 20

// PaidResponse is the answer to a call made with Pay.
type PaidResponse struct {
	// StatusCode, Header and Body are the final answer's.
	StatusCode int
	Header     http.Header
	Body       []byte
	// Requirements is the terms entry paid; nil when no payment was asked.
	Requirements *Requirements
	// Settlement is the decoded PAYMENT-RESPONSE (or X-PAYMENT-RESPONSE);
	// nil when none came.
	Settlement *SettleResponse
	// Replayed says the service answered from what it kept of a first
	// request paid with this payment or its payment id
	// (Idempotent-Replayed: true): the answer was paid once.
	Replayed bool
	// Resent is how many times the paid request was sent again, the same
	// payment each time, after its answer was lost (Resend).
	Resent int
}

// PaymentRefusedError is returned by Pay when the server answered 402 to
// the paid retry.
type PaymentRefusedError struct {
	// Message is the server's "error" field.
	Message string
	// Settlement is the failed settlement report, when one came.
	Settlement *SettleResponse
	// Response is the 402 answer.
	Response *PaidResponse
}

// Error implements the error interface.
func (e *PaymentRefusedError) Error() string {
	msg := "payment refused: " + e.Message
	if e.Settlement != nil && e.Settlement.ErrorReason != "" {
		msg += " (settlement: " + e.Settlement.ErrorReason + ")"
	}
	return msg
}

// Pay POSTs body (JSON) to url and, when the server answers 402, pays with
// key within policy: it reads the terms (ReadTerms) and pays them exact
// (PayTerms). An answer other than 402 is returned as is. Terms outside the
// policy are a *QuoteRefusedError and nothing is signed or sent; a 402 to
// the paid retry is a *PaymentRefusedError.
func Pay(ctx context.Context, hc *http.Client, key *ecdsa.PrivateKey, url string, body []byte, policy PayPolicy) (*PaidResponse, error) {
	first, err := Send(ctx, hc, http.MethodPost, url, body, "", "")
	if err != nil || first.StatusCode != http.StatusPaymentRequired {
		return first, err
	}
	terms, err := ReadTerms(first)
	if err != nil {
		return nil, err
	}
	return PayTerms(ctx, hc, key, url, body, terms, policy)
}

// PayTerms pays the terms of a 402 to a POST of body to url with key within
// policy: it picks the first exact EVM entry the policy allows, signs an
// EIP-3009 authorization of the price valid for at most policy.MaxWindow
// and sends the request again with PAYMENT-SIGNATURE (or X-PAYMENT for v1
// terms), carrying policy.Resend.PaymentID when the terms declare the
// payment-identifier extension; a lost answer is asked for again with the
// same payment (Resend.Send). Terms outside the policy are a
// *QuoteRefusedError and nothing is signed or sent; a 402 to the paid
// request is a *PaymentRefusedError.
func PayTerms(ctx context.Context, hc *http.Client, key *ecdsa.PrivateKey, url string, body []byte, terms Quote, policy PayPolicy) (*PaidResponse, error) {
	req, err := pickTerms(terms.Accepts, policy)
	if err != nil {
		return nil, err
	}
	ext := terms.PaymentIDExtensions(policy.Resend.PaymentID)
	sign := func() (string, string, error) {
		return paymentHeader(key, req, policy.CapWindow(req), terms, ext, time.Now())
	}
	header, value, err := sign()
	if err != nil {
		return nil, err
	}
	paid := PaidRequest{Method: http.MethodPost, URL: url, Body: body, Header: header, Value: value}
	if ext != nil {
		paid.PaymentID = policy.Resend.PaymentID
		paid.Renew = func() (string, error) { _, v, err := sign(); return v, err }
	}
	resp, err := policy.Resend.Send(ctx, hc, paid)
	if err != nil {
		return nil, err
	}
	resp.Requirements = &req
	if resp.Settlement, err = ReadSettlement(resp); err != nil {
		return resp, err
	}
	if resp.StatusCode == http.StatusPaymentRequired {
		return nil, Refused(resp)
	}
	return resp, nil
}

// ReadSettlement decodes the settlement report of an answer, from
// PAYMENT-RESPONSE or else X-PAYMENT-RESPONSE; nil when there is none.
func ReadSettlement(r *PaidResponse) (*SettleResponse, error) {
	for _, name := range []string{HeaderPaymentResponse, HeaderXPaymentResponse} {
		if v := r.Header.Get(name); v != "" {
			var s SettleResponse
			if err := DecodeHeader(v, &s); err != nil {
				return nil, fmt.Errorf("the %s header does not decode: %w", name, err)
			}
			return &s, nil
		}
	}
	return nil, nil
}

// Refused is the *PaymentRefusedError of a 402 answered to a paid request:
// the "error" of its body, and its settlement report.
func Refused(r *PaidResponse) *PaymentRefusedError {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &e)
	return &PaymentRefusedError{Message: e.Error, Settlement: r.Settlement, Response: r}
}

// pickTerms returns the first exact EVM entry of offers within policy, or a
// *QuoteRefusedError saying why each was refused.
func pickTerms(offers []Requirements, policy PayPolicy) (Requirements, error) {
	refused := &QuoteRefusedError{}
	for _, a := range offers {
		if a.Scheme != SchemeExact || !strings.HasPrefix(CanonicalNetwork(a.Network), "eip155:") {
			refused.Reasons = append(refused.Reasons, fmt.Sprintf("scheme %q on %q is not an exact EVM payment", a.Scheme, a.Network))
			continue
		}
		if err := policy.Check(a); err != nil {
			refused.Reasons = append(refused.Reasons, err.Error())
			continue
		}
		return a, nil
	}
	if len(offers) == 0 {
		refused.Reasons = append(refused.Reasons, "the server offers no way to pay")
	}
	return Requirements{}, refused
}

// Quote is what a 402 asks for, read by ReadTerms.
type Quote struct {
	// Version is 2 for terms in the PAYMENT-REQUIRED header, 1 for a v1
	// body.
	Version int
	// Error is the terms' "error": why payment is asked for, or, to a paid
	// request, why it was refused (a bare x402 code when a scheme acts on
	// it).
	Error string
	// Resource is the v2 terms' resource; nil for v1.
	Resource *Resource
	// Accepts are the entries offered, in v2 form.
	Accepts []Requirements
	// Extensions are the extensions the v2 terms declare, each as sent;
	// nil for v1.
	Extensions map[string]json.RawMessage
}

// PaymentIDExtensions returns the extensions a payment of q carries to
// send the payment id id: q's payment-identifier declaration echoed with
// info.id set (WithPaymentID), and no other. It is nil when id is "", when
// q does not declare the extension, or when its declaration is not one.
func (q Quote) PaymentIDExtensions(id string) map[string]json.RawMessage {
	declared, ok := q.Extensions[ExtensionPaymentIdentifier]
	if id == "" || !ok {
		return nil
	}
	ext, err := WithPaymentID(declared, id)
	if err != nil {
		return nil
	}
	return map[string]json.RawMessage{ExtensionPaymentIdentifier: ext}
}

// ReadTerms reads the terms of a 402: from the v2 header, else from the v1
// body, each entry in v2 form.
func ReadTerms(r *PaidResponse) (Quote, error) {
	if v := r.Header.Get(HeaderPaymentRequired); v != "" {
		var pr struct {
			PaymentRequired
			Extensions map[string]json.RawMessage `json:"extensions"`
		}
		if err := DecodeHeader(v, &pr); err != nil {
			return Quote{}, fmt.Errorf("the %s header does not decode: %w", HeaderPaymentRequired, err)
		}
		return Quote{Version: 2, Error: pr.Error, Resource: &pr.Resource, Accepts: pr.Accepts, Extensions: pr.Extensions}, nil
	}
	var pr PaymentRequiredV1
	if err := json.Unmarshal(r.Body, &pr); err != nil || pr.X402Version != 1 {
		return Quote{}, fmt.Errorf("the 402 answer has no %s header and no v1 terms body", HeaderPaymentRequired)
	}
	offers := make([]Requirements, 0, len(pr.Accepts))
	for _, a := range pr.Accepts {
		offers = append(offers, Requirements{Scheme: a.Scheme, Network: CanonicalNetwork(a.Network), Amount: a.MaxAmountRequired,
			Asset: a.Asset, PayTo: a.PayTo, MaxTimeoutSeconds: a.MaxTimeoutSeconds, Extra: a.Extra})
	}
	return Quote{Version: 1, Error: pr.Error, Accepts: offers}, nil
}

// paymentHeader signs a payment of terms for req, valid for signed's
// window, and returns the header to send it in and its value. A v2 payment
// echoes req as quoted and carries ext; a v1 payment has no extensions.
func paymentHeader(key *ecdsa.PrivateKey, req, signed Requirements, terms Quote, ext map[string]json.RawMessage, now time.Time) (string, string, error) {
	a, err := NewAuthorization(key, signed, now)
	if err != nil {
		return "", "", err
	}
	exact, err := SignAuthorization(key, req, a)
	if err != nil {
		return "", "", err
	}
	if terms.Version == 1 {
		v, err := EncodeHeader(PaymentPayloadV1{X402Version: 1, Scheme: req.Scheme, Network: V1Network(req.Network), Payload: exact})
		return HeaderXPayment, v, err
	}
	v, err := EncodeHeader(PaymentPayload{X402Version: 2, Resource: terms.Resource, Accepted: req, Payload: exact, Extensions: ext})
	return HeaderPaymentSignature, v, err
}

// Send sends one request with body (JSON, when not nil) and, when name is
// set, the payment header name: value, and reads the answer, at most 16
// MiB of it. hc nil is http.DefaultClient.
func Send(ctx context.Context, hc *http.Client, method, url string, body []byte, name, value string) (*PaidResponse, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if name != "" {
		req.Header.Set(name, value)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, err
	}
	return &PaidResponse{StatusCode: resp.StatusCode, Header: resp.Header, Body: b,
		Replayed: strings.EqualFold(resp.Header.Get(HeaderIdempotentReplayed), "true")}, nil
}
