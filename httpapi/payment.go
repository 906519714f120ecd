package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"net/http"

	"sandboxd"
	"sandboxd/x402"
)

// pendingBody is the JSON answer of a pending settlement (202).
type pendingBody struct {
	// Status is the settlement's error reason, "settlement_pending".
	Status string `json:"status"`
	// Transaction is the settlement's hash, when one was sent.
	Transaction string `json:"transaction"`
	// Error says what happened and what the payer should do.
	Error string `json:"error"`
}

// addPayment adds the headers of a payment error's details to h (the terms
// in PAYMENT-REQUIRED, a settlement report, Cache-Control: no-store) and
// returns the answer's body: the v1 terms, a pending settlement's body, or
// body unchanged.
func addPayment(h http.Header, e *sandboxd.Error, body any) any {
	p := e.Payment
	noStore(h)
	if p.Terms != nil {
		if len(p.Terms.V2) > 0 {
			h.Set(x402.HeaderPaymentRequired, base64.StdEncoding.EncodeToString(p.Terms.V2))
		}
		if len(p.Terms.V1) > 0 {
			body = p.Terms.V1
		}
	}
	if s := p.Settlement; s != nil {
		addSettlement(h, s)
		if e.Code == sandboxd.CodePending {
			body = pendingBody{Status: s.ErrorReason, Transaction: s.Transaction, Error: e.Message}
		}
	}
	return body
}

// addSettlement adds the settlement report s to h, in the header its
// payer's x402 version reads, with Cache-Control: no-store (a report
// belongs to one payer). A nil s adds nothing.
func addSettlement(h http.Header, s *sandboxd.Settlement) {
	if s == nil {
		return
	}
	name, r := settleReport(s)
	value, _ := x402.EncodeHeader(r) // strings and a bool: it always encodes
	noStore(h)
	h.Set(name, value)
}

// noStore keeps an answer out of every cache: terms are per request, and a
// paid answer or a settlement report belongs to one payer.
func noStore(h http.Header) { h.Set("Cache-Control", "no-store") }

// settleReport is s as x402's SettleResponse, and the header that carries
// it, for its payer's version.
func settleReport(s *sandboxd.Settlement) (string, x402.SettleResponse) {
	return x402.SettleReport(s.Version, x402.SettleResponse{Success: s.Success, ErrorReason: s.ErrorReason,
		Transaction: s.Transaction, Network: s.Network, Payer: s.Payer, Amount: s.Amount, Extra: s.Extra})
}

// jsonObject decodes raw, a JSON object, or returns nil when it is not one.
func jsonObject(raw []byte) map[string]any {
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	return obj
}
