// Package jsonkeys refuses JSON documents that two readers could read two
// ways: an object naming a key twice (Go's decoder keeps the last, a
// JavaScript reader the exact spelling), or, where the schema is closed, a
// key it does not know or spells in another case. It also refuses a
// document nested deeper than MaxDepth, by a scan of the raw bytes that
// allocates nothing, before any decoder builds a level. Both the request
// body of httpapi and the x402 payment headers are checked here.
package jsonkeys

import (
	"fmt"
	"strings"
)

// MaxDepth is how deep any JSON the service reads may nest objects and
// arrays: an x402 payment nests 4 levels, an MCP call with a payment in
// _meta 6. Each level costs a decoder memory and time, so a deeper document
// is refused before any decoder reads it.
const MaxDepth = 32

// Shape is the key schema of one JSON value. A nil *Shape is open: any
// value, whose objects are only checked for duplicate keys. A non-nil Shape
// is a closed object: only the keys in its fields, spelled exactly.
type Shape struct {
	fields map[string]*Shape
	// items is, for ArrayOf, the shape of each item.
	items *Shape
}

// Closed returns the shape of an object taking exactly the named fields,
// each with the given shape (nil: open).
func Closed(fields map[string]*Shape) *Shape { return &Shape{fields: fields} }

// ArrayOf returns the shape of an array whose items have the shape items;
// Scan reads it (Limits.Fields), not Check.
func ArrayOf(items *Shape) *Shape { return &Shape{items: items} }

// Kind says why a key was refused.
type Kind int

// The kinds of refused key.
const (
	// Duplicate is a key named twice in one object, in any letter case.
	Duplicate Kind = iota + 1
	// Misspelled is a key a closed object takes, spelled in another case.
	Misspelled
	// Unknown is a key a closed object does not take.
	Unknown
	// TooDeep is a document nesting objects and arrays deeper than its
	// limit.
	TooDeep
	// TooMany is an array holding too many items, an object too many
	// keys, or a document too many values (Unit says which).
	TooMany
	// TooLong is a string longer than its limit.
	TooLong
	// Syntax is a document that is not JSON (Reason says why).
	Syntax
)

// Error is a document refused for its keys, not its syntax.
type Error struct {
	// Kind says why Key was refused.
	Kind Kind
	// Path is the dotted path of the object holding Key, "" at the top.
	Path string
	// Key is the refused key as sent.
	Key string
	// Other is, for Duplicate, the key's first spelling; for Misspelled,
	// the right spelling.
	Other string
	// Known is, for Unknown, the keys the object takes, sorted.
	Known []string
	// Limit is, for TooDeep, TooMany and TooLong, the bound broken, and
	// Offset the byte at which the document broke it (for Syntax, the byte
	// of the error).
	Limit  int
	Offset int
	// Unit is, for TooMany, what was counted: "items", "keys" or "values".
	Unit string
	// Bound is, for TooMany, the name of the bound broken (Bound.Name),
	// "" for Limits' own.
	Bound string
	// Reason is, for Syntax, what is wrong.
	Reason string
}

// Error describes the refusal in plain words.
func (e *Error) Error() string { return e.Describe("the top object") }

// Describe describes the refusal in plain words, naming the object at the
// top of the document top.
func (e *Error) Describe(top string) string {
	if e.Kind == TooDeep {
		return fmt.Sprintf("the JSON nesting is too deep: objects and arrays go deeper than %d levels at byte %d; the limit is %d levels",
			e.Limit, e.Offset, e.Limit)
	}
	where := top
	if e.Path != "" {
		where = fmt.Sprintf("%q", e.Path)
	}
	switch e.Kind {
	case TooMany:
		if e.Unit == "values" {
			return fmt.Sprintf("the JSON holds more than %d values (at byte %d)", e.Limit, e.Offset)
		}
		msg := fmt.Sprintf("%s holds more than %d %s", where, e.Limit, e.Unit)
		if e.Bound != "" {
			return msg + " (" + e.Bound + ")"
		}
		return msg
	case TooLong:
		return fmt.Sprintf("the string at %s is longer than %d bytes", where, e.Limit)
	case Syntax:
		return fmt.Sprintf("the JSON is not valid: %s (at byte %d)", e.Reason, e.Offset)
	case Duplicate:
		return fmt.Sprintf("key %q appears twice in %s (as %q and %q)", e.Key, where, e.Other, e.Key)
	case Misspelled:
		return fmt.Sprintf("key %q in %s must be spelled %q", e.Key, where, e.Other)
	}
	return fmt.Sprintf("unknown key %q in %s, which takes only %s", e.Key, where, strings.Join(e.Known, ", "))
}

// Check refuses raw, in one Scan, where it nests deeper than MaxDepth, an
// object names a key twice (two keys are the same if they are equal under
// Unicode case folding, as Go's decoder matches struct fields), or, where
// s is closed, a key s does not know or spells in another letter case, at
// any depth. Syntax errors are left to the decoder, which reads raw next.
func Check(raw []byte, s *Shape) *Error {
	e := Scan(raw, Limits{Depth: MaxDepth, Fields: s, ExactKeys: true})
	if e != nil && e.Kind == Syntax {
		return nil
	}
	return e
}

// CheckDepth scans raw once and refuses it (TooDeep) where it nests objects
// and arrays deeper than limit. It reads the bytes as they come, counting
// brackets outside strings, and allocates nothing but the refusal, so it is
// safe on any input; it checks no other syntax (the decoder does). A stray
// closing bracket cannot buy depth: the count never goes below zero.
func CheckDepth(raw []byte, limit int) *Error {
	depth, inString, escaped := 0, false, false
	for i, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > limit {
				return &Error{Kind: TooDeep, Limit: limit, Offset: i}
			}
		case (c == '}' || c == ']') && depth > 0:
			depth--
		}
	}
	return nil
}
