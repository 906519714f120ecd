package httpapi

import "sandboxd/x402"

// withPaymentID returns the extensions declared for a paid route (bazaar's)
// with, when retries are on (Server.Retries), x402's payment-identifier
// declared beside them: byte for byte @x402/extensions'
// declarePaymentIdentifierExtension(false), so an official client sends
// an id and a retry of a lost answer is answered, not paid again. Like
// bazaar, it is quoted in the terms and sent to a facilitator.
func (s *Server) withPaymentID(ext map[string]any) map[string]any {
	if s.Retries {
		ext[x402.ExtensionPaymentIdentifier] = x402.PaymentIdentifierDeclaration()
	}
	return ext
}
