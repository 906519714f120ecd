package mcptools

import (
	"encoding/base64"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
)

// The x402 MCP transport's _meta keys.
const (
	MetaPayment         = "x402/payment"
	MetaPaymentResponse = "x402/payment-response"
)

// toolPayment is the payment request of a paid tool's call: the tool's
// resource, and the PaymentPayload of _meta["x402/payment"], if any, as the
// gate reads it over HTTP.
func toolPayment(req *mcp.CallToolRequest, resource string) Payment {
	pay := Payment{Request: sandboxd.PaymentRequest{ResourceURL: resource, Transport: sandboxd.TransportMCP}}
	if payload, ok := req.Params.Meta[MetaPayment]; ok {
		pay.Request.Signature, pay.Err = paymentSignature(payload)
	}
	return pay
}

// paymentSignature turns a PaymentPayload object from MCP's
// params._meta["x402/payment"] into the value the payment gate reads over
// HTTP in PAYMENT-SIGNATURE: base64 of its JSON. So HTTP and MCP share one
// gate, one ledger and one decoder. A payload that is not a JSON object is
// a CodeInvalid error.
func paymentSignature(payload any) (string, error) {
	obj, ok := payload.(map[string]any)
	if !ok {
		return "", sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.mcp",
			`_meta["%s"] must be an x402 PaymentPayload object`, MetaPayment)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return "", sandboxd.Wrap(sandboxd.CodeInvalid, "httpapi.mcp", err, "the payment does not encode as JSON")
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}
