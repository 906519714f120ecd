package jsonkeys

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// itemsBound is the bound on the items of the array just opened: the
// tightest of lim.Arrays whose path it is, with its name, else lim.Items.
func (s *scanner) itemsBound() (int, string) {
	max, name := s.lim.Items, ""
	for _, b := range s.lim.Arrays {
		if s.at(b.Path) && (max <= 0 || b.Max < max || name == "") {
			max, name = b.Max, b.Name
		}
	}
	return max, name
}

// at reports whether the innermost container is at path, a dotted list of
// keys from the top object ("": the top value), each matched in any
// letter case.
func (s *scanner) at(path string) bool {
	if path == "" {
		return s.depth == 1
	}
	if strings.Count(path, ".")+1 != s.depth-1 {
		return false
	}
	for j, seg := range strings.Split(path, ".") {
		off := s.lbuf[j+1].name
		if off < 0 || !s.keyIs(off, seg) {
			return false
		}
	}
	return true
}

// Span returns where, in the JSON document raw, the value at path starts
// and ends (raw[start:end]), path being dotted keys from the top object
// spelled exactly, or -1, -1 when raw is not valid JSON within MaxDepth,
// or has no such value. Like Scan, it reads raw once and allocates
// nothing.
func Span(raw []byte, path string) (start, end int) {
	s := scanner{raw: raw, lim: Limits{Depth: MaxDepth}, lastKey: -1, target: path, start: -1, end: -1}
	s.hash.SetSeed(seed)
	i := s.space(s.value(s.space(0)))
	if s.err != nil || i < len(raw) {
		return -1, -1
	}
	return s.start, s.end
}

// memberAt reports whether the member whose key was just read (lastKey)
// is at path, every key spelled exactly.
func (s *scanner) memberAt(path string) bool {
	if !s.lbuf[s.depth-1].object || strings.Count(path, ".")+1 != s.depth {
		return false
	}
	j := 0
	for seg := range strings.SplitSeq(path, ".") {
		off := s.lastKey
		if j++; j < s.depth {
			off = s.lbuf[j].name
		}
		if off < 0 || !s.keyMatches(off, seg, false) {
			return false
		}
	}
	return true
}

// keyIs reports whether the key quoted at off folds like name.
func (s *scanner) keyIs(off int, name string) bool { return s.keyMatches(off, name, true) }

// keyMatches reports whether the key quoted at off is name, in any letter
// case when fold.
func (s *scanner) keyMatches(off int, name string, fold bool) bool {
	it := runes{raw: s.raw, i: off + 1}
	for _, want := range name {
		r, _, ok := it.next()
		if fold {
			r, want = foldRune(r), foldRune(want)
		}
		if !ok || r != want {
			return false
		}
	}
	_, _, more := it.next()
	return !more && it.bad == ""
}

// path formats the path of the innermost container, "" at the top: keys
// joined by dots, array items as [i].
func (s *scanner) path() string {
	var b strings.Builder
	for j := 1; j < s.depth; j++ {
		if off := s.lbuf[j].name; off >= 0 {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.keyAt(off))
			continue
		}
		b.WriteString("[" + strconv.Itoa(s.lbuf[j-1].count-1) + "]")
	}
	return b.String()
}

// stringPath is the path of the string being scanned: its container's, and
// for a member's value its key's.
func (s *scanner) stringPath(key bool) string {
	p := s.path()
	n := s.depth
	switch {
	case n == 0 || key:
		return p
	case s.lbuf[n-1].object:
		if p != "" {
			p += "."
		}
		return p + s.keyAt(s.lastKey)
	}
	return p + "[" + strconv.Itoa(s.lbuf[n-1].count-1) + "]"
}

// keyAt decodes the key quoted at off, for a refusal.
func (s *scanner) keyAt(off int) string {
	it := runes{raw: s.raw, i: off + 1}
	var b []byte
	for {
		r, _, ok := it.next()
		if !ok {
			return string(b)
		}
		b = utf8.AppendRune(b, r)
	}
}
