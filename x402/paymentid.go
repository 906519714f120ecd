package x402

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// ExtensionPaymentIdentifier is the name of the payment-identifier
// extension: an idempotency id (16-128 characters of A-Z a-z 0-9 _ -) that a
// payer puts in its payment's extensions, so that a retry after a dropped
// answer is answered instead of paid twice.
const ExtensionPaymentIdentifier = "payment-identifier"

// The id rule of @x402/extensions (isValidPaymentId).
const (
	paymentIDMin = 16
	paymentIDMax = 128
)

// paymentIDRule is the official wording of the id rule, for refusals.
const paymentIDRule = "ID must be 16-128 characters and contain only alphanumeric characters, hyphens, and underscores"

// paymentIdentifierSchema is the JSON schema the official declaration
// carries, in its key order, so that the declaration encodes byte for byte
// as @x402/extensions' declarePaymentIdentifierExtension(false) does.
const paymentIdentifierSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
	`"properties":{"required":{"type":"boolean"},` +
	`"id":{"type":"string","minLength":16,"maxLength":128,"pattern":"^[a-zA-Z0-9_-]+$"}},"required":["required"]}`

// PaymentIdentifierDeclaration returns the extension a server declares in
// its terms (extensions["payment-identifier"]) to say it honours payment
// ids without requiring one. It is a new map on every call; it encodes
// byte for byte as the official declaration.
func PaymentIdentifierDeclaration() map[string]any {
	return map[string]any{
		"info":   map[string]any{"required": false},
		"schema": json.RawMessage(paymentIdentifierSchema),
	}
}

// ParsePaymentID returns the payment id a payment carries in extensions
// (Payment.Extensions), "" when it carries none: no payment-identifier
// extension, a JSON null, or one whose info has no id. Keys are read with
// their exact spelling. The extension must otherwise be an object whose
// info is an object with a boolean required and, when present, an id of
// 16-128 characters of A-Z a-z 0-9 _ -, the verdicts of @x402/extensions'
// validatePaymentIdentifier; anything else is an error whose message says
// what is wrong (a 400 for the caller). The schema and other fields are
// ignored; the id is returned as sent.
func ParsePaymentID(extensions map[string]json.RawMessage) (string, error) {
	raw, ok := extensions[ExtensionPaymentIdentifier]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var ext map[string]json.RawMessage
	if json.Unmarshal(raw, &ext) != nil || ext == nil {
		return "", malformedID("it must be an object")
	}
	var info map[string]json.RawMessage
	if json.Unmarshal(ext["info"], &info) != nil || info == nil {
		return "", malformedID("it must have an object info")
	}
	var required bool
	if r, ok := info["required"]; !ok || json.Unmarshal(r, &required) != nil {
		return "", malformedID("its info must have a boolean required")
	}
	rawID, ok := info["id"]
	if !ok {
		return "", nil
	}
	var id string
	if json.Unmarshal(rawID, &id) != nil || string(rawID) == "null" {
		return "", malformedID("its info id must be a string")
	}
	if !ValidPaymentID(id) {
		return "", malformedID("invalid payment ID format; " + paymentIDRule)
	}
	return id, nil
}

// malformedID is a refusal of a malformed payment-identifier extension.
func malformedID(why string) error {
	return fmt.Errorf("the %s extension is malformed: %s", ExtensionPaymentIdentifier, why)
}

// ValidPaymentID reports whether id follows the id rule: 16-128
// characters of A-Z a-z 0-9 _ -.
func ValidPaymentID(id string) bool {
	if len(id) < paymentIDMin || len(id) > paymentIDMax {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// NewPaymentID returns a new random payment id: "sdx_" and 32 hex digits
// of crypto/rand.
func NewPaymentID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "sdx_" + hex.EncodeToString(b[:])
}

// WithPaymentID returns declared, a server's payment-identifier declaration
// as its terms carried it, with info.id set to id: what a payer echoes in
// its payment's extensions (as @x402/extensions'
// appendPaymentIdentifierToExtensions does). The declaration's other fields
// are kept. It fails when id breaks the id rule or declared is not a
// declaration (an object whose info is an object with a boolean required).
func WithPaymentID(declared json.RawMessage, id string) (json.RawMessage, error) {
	if !ValidPaymentID(id) {
		return nil, fmt.Errorf("invalid payment ID %q: %s", id, paymentIDRule)
	}
	if _, err := ParsePaymentID(map[string]json.RawMessage{ExtensionPaymentIdentifier: declared}); err != nil {
		return nil, err
	}
	var ext, info map[string]json.RawMessage
	if json.Unmarshal(declared, &ext) != nil || json.Unmarshal(ext["info"], &info) != nil || info == nil {
		return nil, errors.New("the payment-identifier declaration is not an object")
	}
	idJSON, err := json.Marshal(id)
	if err != nil {
		return nil, err
	}
	info["id"] = idJSON
	if ext["info"], err = json.Marshal(info); err != nil {
		return nil, err
	}
	return json.Marshal(ext)
}
