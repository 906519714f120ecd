package jsonkeys

import (
	"hash/maphash"
	"sort"
	"unicode"
	"unicode/utf8"
)

// Limits bound what one JSON document may hold, so that no decoder that
// reads it after Scan builds more than the caller can use. A zero field is
// no bound.
type Limits struct {
	// Depth bounds the nesting of objects and arrays.
	Depth int
	// Items bounds the items of any one array.
	Items int
	// Keys bounds the keys of any one object.
	Keys int
	// Values bounds the values of the whole document: every object,
	// array, string, number and literal, members' values included.
	Values int
	// String bounds the bytes of any one string, key or value, as it
	// decodes (escapes counted as the bytes they stand for).
	String int
	// Arrays are tighter bounds on named arrays.
	Arrays []Bound
	// Fields, when set, is the shape of the document: a key of a closed
	// object that no field matches in any letter case, as Go's decoder
	// with DisallowUnknownFields refuses it, is Unknown.
	Fields *Shape
	// ExactKeys, with Fields, refuses a key of a closed object that
	// matches its field only in another letter case (Misspelled): Go's
	// decoder would take it, a JavaScript reader would not.
	ExactKeys bool
}

// Bound is a tighter bound on the items of one array, found by its path.
type Bound struct {
	// Path is the dotted keys from the top object to the array, e.g.
	// "params.arguments.files"; keys match as a decoder matches struct
	// fields, in any letter case.
	Path string
	// Max is the most items the array may hold.
	Max int
	// Name names the bound for the caller, e.g. the config key
	// "max_files".
	Name string
}

// ReasonTrailing is the Reason of a Syntax error that is data after the
// document's one value.
const ReasonTrailing = "data after the JSON value"

// seed keys the hash of keys, so no caller can choose keys that collide.
var seed = maphash.MakeSeed()

// keyRef is one key of an object being scanned: the hash of its folded
// runes and the offset of its opening quote.
type keyRef struct {
	hash uint64
	off  int
}

// level is one object or array being scanned.
type level struct {
	object bool
	count  int
	// keys is where this object's keys start in scanner.keys.
	keys int
	// name is the offset of the key this container is the value of, -1
	// in an array or at the top.
	name int
	// shape is the container's shape in Limits.Fields, nil when open.
	shape *Shape
}

// scanner holds one scan's state: the open containers and the keys of the
// open objects. Its arrays live on the stack for any document whose
// limits fit them.
type scanner struct {
	raw     []byte
	lim     Limits
	values  int
	lastKey int
	hash    maphash.Hash
	err     *Error
	// target is Span's path; start and end its value's bytes once found.
	target     string
	start, end int
	// next is the shape of the value about to be scanned.
	next *Shape
	// depth levels of lbuf are open; nkeys keys of kbuf, then of more,
	// are the keys of the open objects. Slices of its own arrays would
	// move the scanner to the heap.
	depth int
	lbuf  [MaxDepth + 1]level
	nkeys int
	kbuf  [256]keyRef
	more  []keyRef
}

// key is the i-th key of the open objects.
func (s *scanner) key(i int) keyRef {
	if i < len(s.kbuf) {
		return s.kbuf[i]
	}
	return s.more[i-len(s.kbuf)]
}

// addKey remembers a key of the innermost object.
func (s *scanner) addKey(k keyRef) {
	if s.nkeys < len(s.kbuf) {
		s.kbuf[s.nkeys] = k
	} else if i := s.nkeys - len(s.kbuf); i < len(s.more) {
		s.more[i] = k
	} else {
		s.more = append(s.more, k)
	}
	s.nkeys++
}

// Scan reads raw once, left to right, and refuses it at the first place
// where it breaks lim: nested too deep (TooDeep), an array or an object
// holding too many items or keys (TooMany), too many values (TooMany), a
// string too long (TooLong), or an object naming a key twice under Unicode
// case folding, as Go's decoder matches fields (Duplicate). It also checks
// the syntax, as encoding/json does, and reports the first error (Syntax).
// It allocates nothing but its refusal, and costs a time linear in
// len(raw) whatever the shape: a key is compared only with the keys of its
// own object, by a keyed hash, and an object holds at most lim.Keys.
func Scan(raw []byte, lim Limits) *Error {
	s := scanner{raw: raw, lim: lim, lastKey: -1}
	if s.lim.Depth <= 0 || s.lim.Depth > MaxDepth {
		s.lim.Depth = MaxDepth
	}
	s.hash.SetSeed(seed)
	s.next = lim.Fields
	i := s.space(0)
	i = s.value(i)
	if s.err != nil {
		return s.err
	}
	if i = s.space(i); i < len(raw) {
		s.syntax(i, ReasonTrailing)
	}
	return s.err
}

// syntax records a syntax error at offset i and returns len(raw) to stop.
func (s *scanner) syntax(i int, what string) int {
	if s.err == nil {
		s.err = &Error{Kind: Syntax, Offset: i, Reason: what}
	}
	return len(s.raw)
}

// refuse records a bound broken at offset i and returns len(raw) to stop.
func (s *scanner) refuse(e *Error) int {
	if s.err == nil {
		s.err = e
	}
	return len(s.raw)
}

// space skips JSON whitespace from i.
func (s *scanner) space(i int) int {
	for i < len(s.raw) {
		switch s.raw[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value scans one value at i and returns the offset after it.
func (s *scanner) value(i int) int {
	if s.values++; s.lim.Values > 0 && s.values > s.lim.Values {
		return s.refuse(&Error{Kind: TooMany, Path: s.path(), Limit: s.lim.Values, Offset: i, Unit: "values"})
	}
	if i >= len(s.raw) {
		return s.syntax(i, "the JSON ends too early")
	}
	switch c := s.raw[i]; {
	case c == '{' || c == '[':
		return s.container(i)
	case c == '"':
		end, _ := s.str(i, false)
		return end
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number(i)
	case c == 't':
		return s.literal(i, "true")
	case c == 'f':
		return s.literal(i, "false")
	case c == 'n':
		return s.literal(i, "null")
	}
	return s.syntax(i, "a value is expected")
}

// literal scans the word at i.
func (s *scanner) literal(i int, word string) int {
	if len(s.raw)-i < len(word) || string(s.raw[i:i+len(word)]) != word {
		return s.syntax(i, "a value is expected")
	}
	return i + len(word)
}

// number scans a number at i: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number(i int) int {
	if s.raw[i] == '-' {
		i++
	}
	switch {
	case i < len(s.raw) && s.raw[i] == '0':
		i++
	case i < len(s.raw) && s.raw[i] >= '1' && s.raw[i] <= '9':
		i = s.digits(i)
	default:
		return s.syntax(i, "a digit is expected")
	}
	if i < len(s.raw) && s.raw[i] == '.' {
		if i++; i >= len(s.raw) || !isDigit(s.raw[i]) {
			return s.syntax(i, "a digit is expected")
		}
		i = s.digits(i)
	}
	if i < len(s.raw) && (s.raw[i] == 'e' || s.raw[i] == 'E') {
		if i++; i < len(s.raw) && (s.raw[i] == '+' || s.raw[i] == '-') {
			i++
		}
		if i >= len(s.raw) || !isDigit(s.raw[i]) {
			return s.syntax(i, "a digit is expected")
		}
		i = s.digits(i)
	}
	return i
}

// digits skips the digits from i.
func (s *scanner) digits(i int) int {
	for i < len(s.raw) && isDigit(s.raw[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// container scans the object or array opening at i.
func (s *scanner) container(i int) int {
	if s.depth >= s.lim.Depth {
		return s.refuse(&Error{Kind: TooDeep, Limit: s.lim.Depth, Offset: i})
	}
	object := s.raw[i] == '{'
	name := s.lastKey
	if s.depth > 0 && !s.lbuf[s.depth-1].object {
		name = -1
	}
	s.lbuf[s.depth] = level{object: object, keys: s.nkeys, name: name, shape: s.next}
	s.depth++
	if object {
		i = s.members(i + 1)
	} else {
		i = s.items(i + 1)
	}
	s.depth--
	s.nkeys = s.lbuf[s.depth].keys
	return i
}

// items scans the items of the array whose '[' is before i, and its ']'.
func (s *scanner) items(i int) int {
	max, bound := s.itemsBound()
	lv := &s.lbuf[s.depth-1]
	if i = s.space(i); i < len(s.raw) && s.raw[i] == ']' {
		return i + 1
	}
	for {
		if lv.count++; max > 0 && lv.count > max {
			return s.refuse(&Error{Kind: TooMany, Path: s.path(), Limit: max, Offset: i, Unit: "items", Bound: bound})
		}
		s.next = nil
		if sh := lv.shape; sh != nil {
			s.next = sh.items
		}
		i = s.space(s.value(i))
		if s.err != nil {
			return i
		}
		lv = &s.lbuf[s.depth-1]
		switch {
		case i < len(s.raw) && s.raw[i] == ',':
			i = s.space(i + 1)
		case i < len(s.raw) && s.raw[i] == ']':
			return i + 1
		default:
			return s.syntax(i, "',' or ']' is expected after an array item")
		}
	}
}

// members scans the members of the object whose '{' is before i, and its
// '}'.
func (s *scanner) members(i int) int {
	if i = s.space(i); i < len(s.raw) && s.raw[i] == '}' {
		return i + 1
	}
	for {
		lv := &s.lbuf[s.depth-1]
		if lv.count++; s.lim.Keys > 0 && lv.count > s.lim.Keys {
			return s.refuse(&Error{Kind: TooMany, Path: s.path(), Limit: s.lim.Keys, Offset: i, Unit: "keys"})
		}
		if i >= len(s.raw) || s.raw[i] != '"' {
			return s.syntax(i, "a key in quotes is expected")
		}
		end, h := s.str(i, true)
		if s.err != nil {
			return end
		}
		if s.duplicate(i, h) || !s.known(i) {
			return len(s.raw)
		}
		if end = s.space(end); end >= len(s.raw) || s.raw[end] != ':' {
			return s.syntax(end, "':' is expected after a key")
		}
		s.lastKey = i
		key, vstart := i, s.space(end+1)
		i = s.value(vstart)
		if s.lastKey = key; s.target != "" && s.start < 0 && s.memberAt(s.target) {
			s.start, s.end = vstart, i
		}
		if i = s.space(i); s.err != nil {
			return i
		}
		switch {
		case i < len(s.raw) && s.raw[i] == ',':
			i = s.space(i + 1)
		case i < len(s.raw) && s.raw[i] == '}':
			return i + 1
		default:
			return s.syntax(i, "',' or '}' is expected after an object member")
		}
	}
}

// duplicate refuses the key at off, of folded hash h, when its object has
// it already, and otherwise remembers it.
func (s *scanner) duplicate(off int, h uint64) bool {
	for j := s.lbuf[s.depth-1].keys; j < s.nkeys; j++ {
		if k := s.key(j); k.hash == h && s.sameKey(k.off, off) {
			s.refuse(&Error{Kind: Duplicate, Path: s.path(), Key: s.keyAt(off), Other: s.keyAt(k.off)})
			return true
		}
	}
	s.addKey(keyRef{hash: h, off: off})
	return false
}

// known reports whether the key quoted at off is a field of its object's
// shape (any key of an open one), matched in any letter case, setting the
// shape of its value; it refuses the key (Unknown) when not.
func (s *scanner) known(off int) bool {
	s.next = nil
	sh := s.lbuf[s.depth-1].shape
	if sh == nil || sh.fields == nil {
		return true
	}
	for name, child := range sh.fields {
		if s.keyIs(off, name) {
			if s.lim.ExactKeys && !s.keyMatches(off, name, false) {
				s.refuse(&Error{Kind: Misspelled, Path: s.path(), Key: s.keyAt(off), Other: name})
				return false
			}
			s.next = child
			return true
		}
	}
	known := make([]string, 0, len(sh.fields))
	for name := range sh.fields {
		known = append(known, name)
	}
	sort.Strings(known)
	s.refuse(&Error{Kind: Unknown, Path: s.path(), Key: s.keyAt(off), Known: known})
	return false
}

// str scans the string whose quote is at i, returning the offset after
// its closing quote and, for a key, the hash of its folded runes.
func (s *scanner) str(i int, key bool) (int, uint64) {
	s.hash.Reset()
	var buf [utf8.UTFMax]byte
	n := 0
	it := runes{raw: s.raw, i: i + 1}
	for {
		r, size, ok := it.next()
		if !ok {
			if it.bad != "" {
				return s.syntax(it.i, it.bad), 0
			}
			break
		}
		if n += size; s.lim.String > 0 && n > s.lim.String {
			return s.refuse(&Error{Kind: TooLong, Path: s.stringPath(key), Limit: s.lim.String, Offset: i}), 0
		}
		if key {
			w := utf8.EncodeRune(buf[:], foldRune(r))
			_, _ = s.hash.Write(buf[:w])
		}
	}
	return it.i, s.hash.Sum64()
}

// runes iterates over the runes of a JSON string's contents, from after
// its opening quote, decoding escapes as encoding/json does (a lone
// surrogate and invalid UTF-8 are U+FFFD).
type runes struct {
	raw []byte
	i   int
	// bad says why the string is not valid JSON, "" when it ended well.
	bad string
}

// next returns the next rune and the bytes it decodes to, or false at the
// closing quote (i after it) or at an error (bad set).
func (it *runes) next() (rune, int, bool) {
	if it.i >= len(it.raw) {
		it.bad = "the string is not closed"
		return 0, 0, false
	}
	c := it.raw[it.i]
	switch {
	case c == '"':
		it.i++
		return 0, 0, false
	case c < 0x20:
		it.bad = "a control character in a string"
		return 0, 0, false
	case c < utf8.RuneSelf && c != '\\':
		it.i++
		return rune(c), 1, true
	case c != '\\':
		r, size := utf8.DecodeRune(it.raw[it.i:])
		it.i += size
		return r, utf8.RuneLen(r), true
	}
	return it.escape()
}

// escape decodes the escape at it.i.
func (it *runes) escape() (rune, int, bool) {
	if it.i+1 >= len(it.raw) {
		it.bad = "the string is not closed"
		return 0, 0, false
	}
	var r rune
	switch c := it.raw[it.i+1]; c {
	case '"', '\\', '/':
		r = rune(c)
	case 'b':
		r = '\b'
	case 'f':
		r = '\f'
	case 'n':
		r = '\n'
	case 'r':
		r = '\r'
	case 't':
		r = '\t'
	case 'u':
		return it.unicode()
	default:
		it.bad = "an invalid escape in a string"
		return 0, 0, false
	}
	it.i += 2
	return r, 1, true
}

// unicode decodes the \uXXXX escape at it.i, and a low surrogate's after a
// high one's.
func (it *runes) unicode() (rune, int, bool) {
	r, ok := hex4(it.raw, it.i+2)
	if !ok {
		it.bad = "an invalid \\u escape in a string"
		return 0, 0, false
	}
	it.i += 6
	if r >= 0xD800 && r < 0xDC00 {
		if lo, ok := hex4(it.raw, it.i+2); ok && it.i+1 < len(it.raw) && it.raw[it.i] == '\\' && it.raw[it.i+1] == 'u' &&
			lo >= 0xDC00 && lo < 0xE000 {
			it.i += 6
			r = (r-0xD800)<<10 | (lo - 0xDC00) + 0x10000
			return r, 4, true
		}
		return utf8.RuneError, 3, true
	}
	if r >= 0xDC00 && r < 0xE000 {
		return utf8.RuneError, 3, true
	}
	return r, utf8.RuneLen(r), true
}

// hex4 reads four hex digits at i.
func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// foldRune maps r to the smallest rune of its case-folding orbit, so two
// keys fold alike exactly when strings.EqualFold says they are equal.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}
	min := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < min {
			min = f
		}
	}
	return min
}

// sameKey reports whether the keys quoted at a and b fold alike.
func (s *scanner) sameKey(a, b int) bool {
	x, y := runes{raw: s.raw, i: a + 1}, runes{raw: s.raw, i: b + 1}
	for {
		r1, _, ok1 := x.next()
		r2, _, ok2 := y.next()
		if ok1 != ok2 || (ok1 && foldRune(r1) != foldRune(r2)) {
			return false
		}
		if !ok1 {
			return true
		}
	}
}
