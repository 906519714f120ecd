package jsonkeys

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestScan refuses each bound where it is broken, naming the place, and
// takes a document within every bound.
func TestScan(t *testing.T) {
	lim := Limits{Depth: 4, Items: 3, Keys: 3, Values: 20, String: 8,
		Arrays: []Bound{{Path: "files", Max: 2, Name: "max_files"}, {Path: "p.q", Max: 1, Name: "one"}}}
	cases := []struct {
		name, doc string
		want      string // "" when taken
	}{
		{"within bounds", `{"files":[{"a":1},{"b":"12345678"}],"x":[1,2,3]}`, ""},
		{"named array", `{"files":[0,0,0]}`, `"files" holds more than 2 items (max_files)`},
		{"named array in another case", `{"FILES":[0,0,0]}`, `"FILES" holds more than 2 items (max_files)`},
		{"named array escaped", `{"\u0066iles":[0,0,0]}`, `"files" holds more than 2 items (max_files)`},
		{"nested named array", `{"p":{"q":[1,2]}}`, `"p.q" holds more than 1 items (one)`},
		{"any array", `{"x":[1,2,3,4]}`, `"x" holds more than 3 items`},
		{"array in an array", `[[1],[1,2,3,4]]`, `"[1]" holds more than 3 items`},
		{"keys", `{"a":1,"b":2,"c":3,"d":4}`, `the top object holds more than 3 keys`},
		{"values", `{"a":[1,1,1],"b":[1,1,1],"c":[[1,1,1],[1,1,1],[1,1,1]]}`, `the JSON holds more than 20 values`},
		{"depth", `[[[[[1]]]]]`, `deeper than 4 levels`},
		{"long string", `{"code":"123456789"}`, `the string at "code" is longer than 8 bytes`},
		{"escapes count decoded", `{"code":"\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000"}`, ""},
		{"long escaped string", `{"code":"\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000"}`, `longer than 8 bytes`},
		{"duplicate", `{"a":1,"A":2}`, `key "A" appears twice in the top object (as "a" and "A")`},
		{"duplicate escaped", `{"code":1,"\u0063ode":2}`, `key "code" appears twice`},
		{"duplicate kelvin", "{\"k\":1,\"\u212a\":2}", "appears twice"},
		{"same hash prefix is no duplicate", `{"ab":1,"a":2,"b":3}`, ""},
		{"duplicate in an item", `{"x":[{"a":1,"a":2}]}`, `appears twice in "x[0]"`},
		{"same key in two objects", `{"x":[{"a":1},{"a":2}]}`, ""},
		{"syntax", `{"a":1,}`, "not valid"},
		{"trailing data", `{} {}`, "data after the JSON value"},
		{"control character", "\"a\x01\"", "control character"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := Scan([]byte(c.doc), lim)
			switch {
			case c.want == "" && e != nil:
				t.Fatalf("Scan(%s) = %v, want nil", c.doc, e)
			case c.want != "" && (e == nil || !strings.Contains(e.Error(), c.want)):
				t.Fatalf("Scan(%s) = %v, want %q", c.doc, e, c.want)
			}
		})
	}
}

// wideDoc is n items of item in an array under "files".
func wideDoc(item string, n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"code":"print(1)","files":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(item)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// TestScanAllocatesNothing: a document within its bounds, and one refused
// far into it, cost the scan no allocation but its refusal.
func TestScanAllocatesNothing(t *testing.T) {
	lim := Limits{Depth: MaxDepth, Items: 1 << 20, Keys: 64, Values: 1 << 21, String: 1 << 20}
	docs := map[string][]byte{
		"wide numbers": wideDoc("0", 100_000),
		"wide objects": wideDoc(`{"a":0,"b":1,"c":{"d":[1]}}`, 10_000),
		"many keys":    []byte(`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}`),
		"escapes":      []byte(`"` + strings.Repeat(`\u0000`, 100_000) + `"`),
	}
	for name, doc := range docs {
		if e := Scan(doc, lim); e != nil {
			t.Fatalf("%s: %v", name, e)
		}
		if n := testing.AllocsPerRun(5, func() { Scan(doc, lim) }); n != 0 {
			t.Errorf("%s: Scan allocated %.0f times, want 0", name, n)
		}
	}
	tight := Limits{Depth: MaxDepth, Items: 16, Keys: 64, Values: 1024, String: 1 << 20}
	if n := testing.AllocsPerRun(5, func() { Scan(docs["wide numbers"], tight) }); n > 3 {
		t.Errorf("refusal allocated %.0f times, want at most 3", n)
	}
}

// FuzzScan: within bounds that never bind, Scan takes exactly what
// encoding/json takes; and whatever it takes, a decoder reads without a
// duplicate key.
func FuzzScan(f *testing.F) {
	for _, seed := range []string{`{"a":1}`, `[1,2.5e3,-0,"x\u00e9\ud83d\ude00"]`, `{"a":{"b":[true,false,null]}}`,
		`"\ud800"`, `{"a":1,"A":2}`, `01`, `1.`, `{"a" 1}`, "\"\xff\"", `[1,]`, ` {} `} {
		f.Add([]byte(seed))
	}
	lim := Limits{Depth: MaxDepth, Items: 1 << 30, Keys: 1 << 30, Values: 1 << 30, String: 1 << 30}
	f.Fuzz(func(t *testing.T, doc []byte) {
		e := Scan(doc, lim)
		if e != nil && e.Kind == TooDeep {
			return
		}
		valid := json.Valid(doc)
		if e != nil && e.Kind == Duplicate {
			if !valid {
				return // the duplicate came before the syntax error
			}
			var m map[string]any
			_ = json.Unmarshal(doc, &m)
			return
		}
		if (e == nil) != valid {
			t.Fatalf("Scan(%q) = %v, json.Valid = %v", doc, e, valid)
		}
	})
}

// TestSpan finds a value by its exact path, and nothing in a document that
// is not JSON.
func TestSpan(t *testing.T) {
	for _, c := range []struct{ doc, path, want string }{
		{`{"params":{"name":"x","arguments":{"code":"1"}},"id":1}`, "params.arguments", `{"code":"1"}`},
		{`{"a":{"arguments":1},"params":{"arguments" : [1, 2] }}`, "params.arguments", `[1, 2]`},
		{`{"method":"tools/call"}`, "method", `"tools/call"`},
		{`{"Params":{"arguments":1}}`, "params.arguments", ""},
		{`{"params":[{"arguments":1}]}`, "params.arguments", ""},
		{`{"params":{"arguments":1}`, "params.arguments", ""},
	} {
		start, end := Span([]byte(c.doc), c.path)
		got := ""
		if start >= 0 {
			got = c.doc[start:end]
		}
		if got != c.want {
			t.Errorf("Span(%s, %s) = %q, want %q", c.doc, c.path, got, c.want)
		}
	}
}
