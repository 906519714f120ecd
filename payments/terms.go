package payments

import (
	"math/big"

	"sandboxd"
)

// terms builds the x402 terms for one resource: the v2 PaymentRequired
// (for the PAYMENT-REQUIRED header) and the v1 body, both saying message.
func terms(req Requirements, description, resourceURL, message string) (PaymentRequired, PaymentRequiredV1) {
	v2 := PaymentRequired{
		X402Version: 2,
		Error:       message,
		Resource:    Resource{URL: resourceURL, Description: description, MimeType: mimeJSON},
		Accepts:     []Requirements{req},
		Extensions:  map[string]any{},
	}
	v1 := PaymentRequiredV1{
		X402Version: 1,
		Error:       message,
		Accepts: []RequirementsV1{{
			Scheme:            req.Scheme,
			Network:           V1Network(req.Network),
			MaxAmountRequired: req.Amount,
			Resource:          resourceURL,
			Description:       description,
			MimeType:          mimeJSON,
			PayTo:             req.PayTo,
			MaxTimeoutSeconds: req.MaxTimeoutSeconds,
			Asset:             req.Asset,
			Extra:             req.Extra,
		}},
	}
	return v2, v1
}

// paymentError returns a CodePayment error carrying the terms: the v2 terms
// in the PAYMENT-REQUIRED header, the v1 terms as the body.
func (g *Gate) paymentError(op, resourceURL, message string, cause error) *sandboxd.Error {
	v2, v1 := terms(g.req, g.description, resourceURL, message)
	e := &sandboxd.Error{Code: sandboxd.CodePayment, Op: op, Message: message, Err: cause, Body: v1, Header: noStore()}
	if value, err := EncodeHeader(v2); err == nil {
		e.Header.Set(HeaderPaymentRequired, value)
	}
	return e
}

// priceText says the price for a person, e.g. "0.005 USDC on eip155:84532".
func (g *Gate) priceText() string {
	amount, _ := new(big.Int).SetString(g.req.Amount, 10)
	return FormatPrice(amount) + " " + g.req.Extra.Name + " on " + g.req.Network
}
