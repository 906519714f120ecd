// Package configcheck is how every section's Validate reports its
// problems: one message per problem, each naming its key and what is
// allowed, collected rather than stopped at, so an operator fixes them all
// in one pass.
package configcheck

import (
	"cmp"
	"errors"
	"fmt"
)

// Size units of the ranges the sections allow (untyped: they count bytes
// of any integer type).
const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
)

// Problems collects a configuration's problems. The zero value is ready.
type Problems struct {
	// Prefix goes before every key it names: a section's ("runtime.") or
	// a lead ("config: ") before keys written whole.
	Prefix string
	// Name, when set, names each key instead of Prefix: where the keys of
	// one section live under several (an environment's own keys, and the
	// runtime.* keys it takes unchanged).
	Name func(key string) string
	errs []error
}

// Check records key's problem, "<prefix><key>: <message>", when ok is
// false.
func (p *Problems) Check(ok bool, key, format string, args ...any) {
	if !ok {
		p.errs = append(p.errs, fmt.Errorf("%s: %s", p.Key(key), fmt.Sprintf(format, args...)))
	}
}

// Bad records key's problem: Check of a problem already found, and a
// section's validator where it takes a func(key, format, args) (p.Bad).
func (p *Problems) Bad(key, format string, args ...any) { p.Check(false, key, format, args...) }

// CheckField is Check for a key that stands for a Go field too, named in
// parentheses after the message, for a reader of the code.
func (p *Problems) CheckField(ok bool, key, field, format string, args ...any) {
	p.Check(ok, key, format+" (%s)", append(args, field)...)
}

// Key is key as this collection names it, for a message that refers to
// another key of the same section.
func (p *Problems) Key(key string) string {
	if p.Name != nil {
		return p.Name(key)
	}
	return p.Prefix + key
}

// Add records problems found otherwise (nil ones are skipped).
func (p *Problems) Add(errs ...error) {
	for _, err := range errs {
		if err != nil {
			p.errs = append(p.errs, err)
		}
	}
}

// Errs is every problem recorded, one error each.
func (p *Problems) Errs() []error { return p.errs }

// Err is every problem recorded, joined; nil when there is none.
func (p *Problems) Err() error { return errors.Join(p.errs...) }

// InRange reports whether lo <= n <= hi.
func InRange[N cmp.Ordered](n, lo, hi N) bool { return n >= lo && n <= hi }
