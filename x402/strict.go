package x402

import (
	"encoding/json"
	"errors"

	"sandboxd/internal/jsonkeys"
)

// Payment shapes, from the x402 v1 and v2 schemas. Open: extensions, the
// terms entry's extra and anything under them; everything the signature or
// the settlement depends on is closed.
var (
	authorizationShape = jsonkeys.Closed(map[string]*jsonkeys.Shape{
		"from": nil, "to": nil, "value": nil, "validAfter": nil, "validBefore": nil, "nonce": nil})
	exactShape    = jsonkeys.Closed(map[string]*jsonkeys.Shape{"signature": nil, "authorization": authorizationShape})
	resourceShape = jsonkeys.Closed(map[string]*jsonkeys.Shape{"url": nil, "description": nil, "mimeType": nil})
	acceptedShape = jsonkeys.Closed(map[string]*jsonkeys.Shape{
		"scheme": nil, "network": nil, "amount": nil, "asset": nil, "payTo": nil,
		"maxTimeoutSeconds": nil, "extra": nil})
	paymentV2Shape = jsonkeys.Closed(map[string]*jsonkeys.Shape{
		"x402Version": nil, "resource": resourceShape, "accepted": acceptedShape,
		"payload": exactShape, "extensions": nil})
	// paymentRawShape is a v2 payment of a scheme whose payload its own
	// package decodes strictly (batch-settlement: x402/channel.Decode).
	paymentRawShape = jsonkeys.Closed(map[string]*jsonkeys.Shape{
		"x402Version": nil, "resource": resourceShape, "accepted": acceptedShape,
		"payload": nil, "extensions": nil})
	paymentV1Shape = jsonkeys.Closed(map[string]*jsonkeys.Shape{
		"x402Version": nil, "scheme": nil, "network": nil, "payload": exactShape})
)

// checkKeys refuses, at any depth, an object naming a key twice in any
// letter case (Go's decoder would keep the last, a JavaScript reader the
// exact spelling: two readings of one payment), and, where s is closed, a
// key it does not know or spells in another case. Syntax errors are left to
// the decoder.
func checkKeys(raw []byte, s *jsonkeys.Shape) error {
	e := jsonkeys.Check(raw, s)
	if e == nil {
		return nil
	}
	msg := e.Describe("the payment object")
	switch e.Kind {
	case jsonkeys.Duplicate:
		msg += "; send each key once, spelled exactly as x402 does"
	case jsonkeys.Unknown:
		msg += ": remove it"
	}
	return errors.New(msg)
}

// DecodeStrict checks raw's keys against s (see checkKeys), then decodes it
// into v: the one strict reading of every x402 object, shared with the
// scheme packages.
func DecodeStrict(raw []byte, s *jsonkeys.Shape, v any) error {
	if err := checkKeys(raw, s); err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}
