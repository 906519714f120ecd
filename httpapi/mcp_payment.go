package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"

	"sandboxd"
	"sandboxd/x402"
)

// The x402 MCP transport's _meta keys.
const (
	metaPayment         = "x402/payment"
	metaPaymentResponse = "x402/payment-response"
)

// paymentHeader turns a PaymentPayload object from MCP's
// params._meta["x402/payment"] into the header the payment gate reads over
// HTTP: PAYMENT-SIGNATURE, base64 of its JSON. So HTTP and MCP share one
// gate, one ledger and one decoder. A payload that is not a JSON object is
// a CodeInvalid error.
func paymentHeader(payload any) (http.Header, error) {
	obj, ok := payload.(map[string]any)
	if !ok {
		return nil, sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.mcp",
			`_meta["%s"] must be an x402 PaymentPayload object`, metaPayment)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeInvalid, "httpapi.mcp", err, "the payment does not encode as JSON")
	}
	h := http.Header{}
	h.Set(x402.HeaderPaymentSignature, base64.StdEncoding.EncodeToString(raw))
	return h, nil
}

// headerObject decodes the x402 header name in h (base64 of a JSON object),
// or returns nil when it is absent or does not decode.
func headerObject(h http.Header, name string) map[string]any {
	value := h.Get(name)
	if value == "" {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(value)
	if err != nil {
		return nil
	}
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	return obj
}

// settlementOf returns the settlement report in h (v2's PAYMENT-RESPONSE,
// else v1's), or nil.
func settlementOf(h http.Header) map[string]any {
	if obj := headerObject(h, x402.HeaderPaymentResponse); obj != nil {
		return obj
	}
	return headerObject(h, x402.HeaderXPaymentResponse)
}

// paymentTerms returns the x402 v2 PaymentRequired that err carries in its
// PAYMENT-REQUIRED header, or nil when err carries none.
func paymentTerms(err error) map[string]any {
	var e *sandboxd.Error
	if !errors.As(err, &e) || e.Code != sandboxd.CodePayment {
		return nil
	}
	return headerObject(e.Header, x402.HeaderPaymentRequired)
}
