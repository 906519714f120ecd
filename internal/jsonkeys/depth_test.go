package jsonkeys

import (
	"runtime"
	"strings"
	"testing"
)

// nested is a document of depth levels of arrays, closed or not.
func nested(depth int, closed bool) []byte {
	doc := strings.Repeat("[", depth)
	if closed {
		doc += strings.Repeat("]", depth)
	}
	return []byte(doc)
}

// TestCheckDepth counts only the brackets outside strings, refuses the
// first level past the limit at its byte, and lets no stray closing
// bracket buy depth.
func TestCheckDepth(t *testing.T) {
	cases := []struct {
		name, doc string
		limit     int
		offset    int // -1: accepted
	}{
		{"at the limit", `{"a":[1]}`, 2, -1},
		{"one past", `{"a":[{}]}`, 2, 6},
		{"brackets in a string", `{"a":"[[[[{{{{"}`, 1, -1},
		{"escaped quote keeps the string open", `{"a":"\"[[["}`, 1, -1},
		{"escaped backslash closes it", `{"a":"\\"}[[`, 1, 11},
		{"stray closers buy nothing", `]]]]]][[[`, 2, 8},
		{"siblings are not deeper", `[[1],[2],[3]]`, 2, -1},
		{"unclosed", `[[[`, 2, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := CheckDepth([]byte(c.doc), c.limit)
			switch {
			case c.offset < 0 && e != nil:
				t.Fatalf("CheckDepth(%s, %d) = %v, want nil", c.doc, c.limit, e)
			case c.offset >= 0 && (e == nil || e.Kind != TooDeep || e.Offset != c.offset || e.Limit != c.limit):
				t.Fatalf("CheckDepth(%s, %d) = %#v, want TooDeep at byte %d", c.doc, c.limit, e, c.offset)
			}
		})
	}
	if e := Check(nested(MaxDepth, true), nil); e != nil {
		t.Fatalf("depth %d refused: %v", MaxDepth, e)
	}
	e := Check(nested(MaxDepth+1, true), nil)
	if e == nil || e.Kind != TooDeep {
		t.Fatalf("depth %d: %v, want TooDeep", MaxDepth+1, e)
	}
	if msg := e.Error(); !strings.Contains(msg, "nesting is too deep") || !strings.Contains(msg, "limit is 32") {
		t.Fatalf("message %q does not say the nesting is too deep and the limit", msg)
	}
}

// TestDeepDocumentCostsNothing: a document 100,000 levels deep, closed or
// not, is refused by Check having allocated one error, in a few
// milliseconds. The recursive walk it replaced kept a formatted path alive
// at every level: gigabytes at this depth.
func TestDeepDocumentCostsNothing(t *testing.T) {
	for _, closed := range []bool{true, false} {
		doc := nested(100_000, closed)
		var e *Error
		allocs := testing.AllocsPerRun(5, func() { e = Check(doc, nil) })
		if e == nil || e.Kind != TooDeep {
			t.Fatalf("closed=%v: Check = %v, want TooDeep", closed, e)
		}
		if allocs > 2 {
			t.Errorf("closed=%v: Check allocated %.0f times, want at most 2", closed, allocs)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		Check(doc, nil)
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<10 {
			t.Errorf("closed=%v: Check allocated %d bytes, want under 1 KiB", closed, grew)
		}
	}
}
