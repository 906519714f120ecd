package x402

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// shape is the key schema of one JSON value in a payment. A nil *shape is
// open: any value, whose objects are only checked for duplicate keys. A
// non-nil shape is a closed object: only the keys in fields, spelled exactly.
type shape struct {
	fields map[string]*shape
}

// closed returns the shape of an object taking exactly the named fields,
// each with the given shape (nil: open).
func closed(fields map[string]*shape) *shape { return &shape{fields: fields} }

// Payment shapes, from the x402 v1 and v2 schemas. Open: extensions, the
// terms entry's extra and anything under them; everything the signature or
// the settlement depends on is closed.
var (
	authorizationShape = closed(map[string]*shape{
		"from": nil, "to": nil, "value": nil, "validAfter": nil, "validBefore": nil, "nonce": nil})
	exactShape    = closed(map[string]*shape{"signature": nil, "authorization": authorizationShape})
	resourceShape = closed(map[string]*shape{"url": nil, "description": nil, "mimeType": nil})
	acceptedShape = closed(map[string]*shape{
		"scheme": nil, "network": nil, "amount": nil, "asset": nil, "payTo": nil,
		"maxTimeoutSeconds": nil, "extra": nil})
	paymentV2Shape = closed(map[string]*shape{
		"x402Version": nil, "resource": resourceShape, "accepted": acceptedShape,
		"payload": exactShape, "extensions": nil})
	paymentV1Shape = closed(map[string]*shape{
		"x402Version": nil, "scheme": nil, "network": nil, "payload": exactShape})
)

// keyError is a payment refused for its keys, not its syntax.
type keyError struct{ msg string }

func (e *keyError) Error() string { return e.msg }

// keyErrorf returns a *keyError with the formatted message.
func keyErrorf(format string, a ...any) error { return &keyError{msg: fmt.Sprintf(format, a...)} }

// checkKeys walks the JSON document raw and refuses, at any depth, an
// object naming a key twice in any letter case (Go's decoder would keep the
// last, a JavaScript reader the exact spelling: two readings of one
// payment), and, where s is closed, a key it does not know or spells in
// another case. Syntax errors are left to the decoder.
func checkKeys(raw []byte, s *shape) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var ke *keyError
	if err := walkValue(dec, "", s); errors.As(err, &ke) {
		return err
	}
	return nil
}

// walkValue consumes one value from dec, checking its objects' keys.
func walkValue(dec *json.Decoder, path string, s *shape) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		return walkObject(dec, path, s)
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, fmt.Sprintf("%s[%d]", path, i), nil); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	return nil
}

// walkObject consumes the members of an object whose '{' was read.
func walkObject(dec *json.Decoder, path string, s *shape) error {
	seen := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		at := join(path, key)
		if first, dup := seen[strings.ToLower(key)]; dup {
			return keyErrorf("key %q appears twice in %s (as %q and %q); send each key once, spelled exactly as x402 does",
				key, where(path), first, key)
		}
		seen[strings.ToLower(key)] = key
		var child *shape
		if s != nil {
			c, ok := s.fields[key]
			if !ok {
				return unknownKey(path, key, s)
			}
			child = c
		}
		if err := walkValue(dec, at, child); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

// unknownKey is the error of a key a closed object does not take.
func unknownKey(path, key string, s *shape) error {
	names := make([]string, 0, len(s.fields))
	for name := range s.fields {
		if strings.EqualFold(name, key) {
			return keyErrorf("key %q in %s must be spelled %q", key, where(path), name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return keyErrorf("unknown key %q in %s, which takes only %s: remove it",
		key, where(path), strings.Join(names, ", "))
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func where(path string) string {
	if path == "" {
		return "the payment object"
	}
	return fmt.Sprintf("%q", path)
}

// decodeStrict checks raw's keys against s, then decodes it into v.
func decodeStrict(raw []byte, s *shape, v any) error {
	if err := checkKeys(raw, s); err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}
