package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"sandboxd"
)

// The x402 MCP transport's _meta keys.
const (
	metaPayment         = "x402/payment"
	metaPaymentResponse = "x402/payment-response"
)

// paymentSignature turns a PaymentPayload object from MCP's
// params._meta["x402/payment"] into the value the payment gate reads over
// HTTP in PAYMENT-SIGNATURE: base64 of its JSON. So HTTP and MCP share one
// gate, one ledger and one decoder. A payload that is not a JSON object is
// a CodeInvalid error.
func paymentSignature(payload any) (string, error) {
	obj, ok := payload.(map[string]any)
	if !ok {
		return "", sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.mcp",
			`_meta["%s"] must be an x402 PaymentPayload object`, metaPayment)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return "", sandboxd.Wrap(sandboxd.CodeInvalid, "httpapi.mcp", err, "the payment does not encode as JSON")
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}

// settlementMeta returns the settlement report s as its payer's version
// reads it (see settleReport), as a JSON object for _meta, or nil.
func settlementMeta(s *sandboxd.Settlement) map[string]any {
	if s == nil {
		return nil
	}
	_, r := settleReport(s)
	raw, _ := json.Marshal(r) // strings and a bool: it always encodes
	return jsonObject(raw)
}

// paymentTerms returns the x402 v2 PaymentRequired that err carries as a
// JSON object, or nil when err carries none.
func paymentTerms(err error) map[string]any {
	var e *sandboxd.Error
	if !errors.As(err, &e) || e.Code != sandboxd.CodePayment || e.Payment == nil || e.Payment.Terms == nil {
		return nil
	}
	return jsonObject(e.Payment.Terms.V2)
}
