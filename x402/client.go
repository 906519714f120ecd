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
// key within policy: it reads the terms (the v2 PAYMENT-REQUIRED header,
// else the v1 body), picks the first exact EVM entry the policy allows, signs
// an EIP-3009 authorization of the price valid for at most policy.MaxWindow
// and retries with PAYMENT-SIGNATURE (or X-PAYMENT for v1-only terms). An
// answer other than 402 is returned as is. Terms outside the policy are a
// *quoteRefusedError and nothing is signed or sent; a 402 to the paid retry
// is a *PaymentRefusedError.
func Pay(ctx context.Context, hc *http.Client, key *ecdsa.PrivateKey, url string, body []byte, policy PayPolicy) (*PaidResponse, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	first, err := post(ctx, hc, url, body, "", "")
	if err != nil || first.StatusCode != http.StatusPaymentRequired {
		return first, err
	}
	offers, resource, version, err := readTerms(first)
	if err != nil {
		return nil, err
	}
	req, err := pickTerms(offers, policy)
	if err != nil {
		return nil, err
	}
	header, value, err := paymentHeader(key, req, policy.capWindow(req), resource, version, time.Now())
	if err != nil {
		return nil, err
	}
	resp, err := post(ctx, hc, url, body, header, value)
	if err != nil {
		return nil, err
	}
	resp.Requirements = &req
	for _, name := range []string{HeaderPaymentResponse, HeaderXPaymentResponse} {
		if v := resp.Header.Get(name); v != "" {
			var s SettleResponse
			if err := DecodeHeader(v, &s); err != nil {
				return resp, fmt.Errorf("the %s header does not decode: %w", name, err)
			}
			resp.Settlement = &s
			break
		}
	}
	if resp.StatusCode == http.StatusPaymentRequired {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(resp.Body, &e)
		return nil, &PaymentRefusedError{Message: e.Error, Settlement: resp.Settlement, Response: resp}
	}
	return resp, nil
}

// pickTerms returns the first exact EVM entry of offers within policy, or a
// *quoteRefusedError saying why each was refused.
func pickTerms(offers []Requirements, policy PayPolicy) (Requirements, error) {
	refused := &quoteRefusedError{}
	for _, a := range offers {
		if a.Scheme != SchemeExact || !strings.HasPrefix(CanonicalNetwork(a.Network), "eip155:") {
			refused.Reasons = append(refused.Reasons, fmt.Sprintf("scheme %q on %q is not an exact EVM payment", a.Scheme, a.Network))
			continue
		}
		if err := policy.check(a); err != nil {
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

// readTerms reads the terms entries of a 402: from the v2 header, else from
// the v1 body, each in v2 form, with the version.
func readTerms(r *PaidResponse) ([]Requirements, *Resource, int, error) {
	if v := r.Header.Get(HeaderPaymentRequired); v != "" {
		var pr PaymentRequired
		if err := DecodeHeader(v, &pr); err != nil {
			return nil, nil, 0, fmt.Errorf("the %s header does not decode: %w", HeaderPaymentRequired, err)
		}
		return pr.Accepts, &pr.Resource, 2, nil
	}
	var pr PaymentRequiredV1
	if err := json.Unmarshal(r.Body, &pr); err != nil || pr.X402Version != 1 {
		return nil, nil, 0, fmt.Errorf("the 402 answer has no %s header and no v1 terms body", HeaderPaymentRequired)
	}
	offers := make([]Requirements, 0, len(pr.Accepts))
	for _, a := range pr.Accepts {
		offers = append(offers, Requirements{Scheme: a.Scheme, Network: CanonicalNetwork(a.Network), Amount: a.MaxAmountRequired,
			Asset: a.Asset, PayTo: a.PayTo, MaxTimeoutSeconds: a.MaxTimeoutSeconds, Extra: a.Extra})
	}
	return offers, nil, 1, nil
}

// paymentHeader signs a payment for req, valid for signed's window, and
// returns the header to send it in and its value. A v2 payment echoes req
// as quoted.
func paymentHeader(key *ecdsa.PrivateKey, req, signed Requirements, resource *Resource, version int, now time.Time) (string, string, error) {
	a, err := NewAuthorization(key, signed, now)
	if err != nil {
		return "", "", err
	}
	exact, err := SignAuthorization(key, req, a)
	if err != nil {
		return "", "", err
	}
	if version == 1 {
		v, err := EncodeHeader(PaymentPayloadV1{X402Version: 1, Scheme: req.Scheme, Network: V1Network(req.Network), Payload: exact})
		return HeaderXPayment, v, err
	}
	v, err := EncodeHeader(PaymentPayload{X402Version: 2, Resource: resource, Accepted: req, Payload: exact})
	return HeaderPaymentSignature, v, err
}

// post sends one JSON POST, with a payment header when name is set.
func post(ctx context.Context, hc *http.Client, url string, body []byte, name, value string) (*PaidResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
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
	return &PaidResponse{StatusCode: resp.StatusCode, Header: resp.Header, Body: b}, nil
}
