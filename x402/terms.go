package x402

// Terms builds the x402 terms for one resource: the v2 PaymentRequired
// (for the PAYMENT-REQUIRED header) offering req and then more, and the v1
// body offering req only (v1 has no other scheme), both saying message.
func Terms(req Requirements, description, resourceURL, message string, more ...Requirements) (PaymentRequired, PaymentRequiredV1) {
	v2 := PaymentRequired{
		X402Version: 2,
		Error:       message,
		Resource:    NewResource(resourceURL, description),
		Accepts:     append([]Requirements{req}, more...),
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

// NewResource is the resource this server quotes for a call at url: the
// one a facilitator is sent.
func NewResource(url, description string) Resource {
	return Resource{URL: url, Description: description, MimeType: mimeJSON}
}
