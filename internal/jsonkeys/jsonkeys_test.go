package jsonkeys

import (
	"reflect"
	"testing"
)

// TestCheck refuses duplicates in any case folding at any depth, and
// unknown or misspelled keys where the shape is closed; it leaves syntax
// errors to the decoder.
func TestCheck(t *testing.T) {
	inner := Closed(map[string]*Shape{"a": nil, "b": nil})
	top := Closed(map[string]*Shape{"in": inner, "open": nil})
	cases := []struct {
		name, doc string
		shape     *Shape
		want      *Error
	}{
		{"clean", `{"in":{"a":1,"b":[1,2]},"open":{"x":{"y":1}}}`, top, nil},
		{"exact duplicate", `{"a":1,"a":2}`, nil, &Error{Kind: Duplicate, Key: "a", Other: "a"}},
		{"other case", `{"Code":1,"code":2}`, nil, &Error{Kind: Duplicate, Key: "code", Other: "Code"}},
		{"long s folds to s", `{"stdin":1,"ſtdin":2}`, nil, &Error{Kind: Duplicate, Key: "ſtdin", Other: "stdin"}},
		{"kelvin folds to k", "{\"k\":1,\"\u212a\":2}", nil, &Error{Kind: Duplicate, Key: "\u212a", Other: "k"}},
		{"deep in an array", `{"open":[{"x":1},{"x":1,"X":2}]}`, top, &Error{Kind: Duplicate, Path: "open[1]", Key: "X", Other: "x"}},
		{"misspelled", `{"in":{"A":1}}`, top, &Error{Kind: Misspelled, Path: "in", Key: "A", Other: "a"}},
		{"unknown", `{"in":{"c":1}}`, top, &Error{Kind: Unknown, Path: "in", Key: "c", Known: []string{"a", "b"}}},
		{"syntax error is the decoder's", `{"a":1,`, nil, nil},
		{"not an object", `[1,"a"]`, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Check([]byte(c.doc), c.shape)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Check(%s) = %#v, want %#v", c.doc, got, c.want)
			}
		})
	}
}

// TestDescribe words each kind, naming the top object as asked.
func TestDescribe(t *testing.T) {
	for _, c := range []struct {
		e    *Error
		want string
	}{
		{&Error{Kind: Duplicate, Key: "A", Other: "a"}, `key "A" appears twice in the payment (as "a" and "A")`},
		{&Error{Kind: Misspelled, Path: "p", Key: "A", Other: "a"}, `key "A" in "p" must be spelled "a"`},
		{&Error{Kind: Unknown, Path: "p.q", Key: "c", Known: []string{"a", "b"}}, `unknown key "c" in "p.q", which takes only a, b`},
	} {
		if got := c.e.Describe("the payment"); got != c.want {
			t.Errorf("Describe = %q, want %q", got, c.want)
		}
	}
}
