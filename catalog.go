package sandboxd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Catalog is the enabled environments in the order discovery lists them, each with the languages it runs,
// its default first (Environment gains Languages []string).
type Catalog []Environment

// Resolve returns the canonical language and the environment of a request, or a CodeInvalid *Error that
// names what this service runs. It is the only place the two fields are combined.
//
// Both fields are trimmed and lower-cased; blank is absent.
//  1. language is canonicalized (NormalizeLanguage). Unknown: `language "ruby" is not supported; this service
//     runs python, javascript, typescript, bash (also python3, js, node, ts, sh)`, listing only what some
//     enabled environment runs.
//  2. environment given: it must be enabled (else `environment "x" is not configured; use one of: …`).
//     Without language, its first language. With a language it does not list:
//     `environment "data" runs python, bash; javascript runs in node` (or `…; javascript is not offered
//     here` when no enabled environment lists it).
//  3. environment absent: without language, DefaultEnvironment as if it were given (python in python).
//     With one, its HomeEnvironment when that is enabled and lists it, else the first enabled environment
//     by name that lists it, else `javascript is not offered here`.
func (c Catalog) Resolve(language, environment string) (lang, env string, err error) {
	language = strings.TrimSpace(language)
	environment = strings.ToLower(strings.TrimSpace(environment))
	if language != "" {
		var ok bool
		if lang, ok = NormalizeLanguage(language); !ok {
			return "", "", Errorf(CodeInvalid, "sandboxd.resolve", "language %s is not supported; %s",
				quoteName(strings.ToLower(language)), c.offered())
		}
	}
	if environment == "" && lang != "" {
		if env = c.runs(lang); env == "" {
			return "", "", Errorf(CodeInvalid, "sandboxd.resolve", "%s is not offered here", lang)
		}
		return lang, env, nil
	}
	if environment == "" {
		environment = DefaultEnvironment
	}
	e, ok := c.find(environment)
	if !ok {
		return "", "", Errorf(CodeInvalid, "sandboxd.resolve", "environment %s is not configured; use one of: %s",
			quoteName(environment), strings.Join(c.names(), ", "))
	}
	if lang == "" && len(e.Languages) > 0 {
		return e.Languages[0], e.Name, nil
	}
	if !slices.Contains(e.Languages, lang) {
		where := lang + " is not offered here"
		if home := c.runs(lang); home != "" {
			where = lang + " runs in " + home
		}
		return "", "", Errorf(CodeInvalid, "sandboxd.resolve", "environment %q runs %s; %s",
			e.Name, strings.Join(e.Languages, ", "), where)
	}
	return lang, e.Name, nil
}

// find returns the environment of that name.
func (c Catalog) find(name string) (Environment, bool) {
	for _, e := range c {
		if e.Name == name {
			return e, true
		}
	}
	return Environment{}, false
}

// names lists the environments' names, in the catalog's order.
func (c Catalog) names() []string {
	names := make([]string, len(c))
	for i, e := range c {
		names[i] = e.Name
	}
	return names
}

// runs returns the environment a language runs in when a request names
// none (Resolve's rule 3), or "" when no environment runs it.
func (c Catalog) runs(lang string) string {
	if e, ok := c.find(HomeEnvironment(lang)); ok && slices.Contains(e.Languages, lang) {
		return e.Name
	}
	env := ""
	for _, e := range c {
		if slices.Contains(e.Languages, lang) && (env == "" || e.Name < env) {
			env = e.Name
		}
	}
	return env
}

// Languages lists the canonical names of the languages some environment
// of the catalog runs, in the order messages name them (python,
// javascript, typescript, bash).
func (c Catalog) Languages() []string {
	var out []string
	for _, n := range languageNames {
		if n.spelling == n.canonical && c.runs(n.canonical) != "" {
			out = append(out, n.canonical)
		}
	}
	return out
}

// Spellings lists every spelling of the language field that names a
// language some environment runs: the canonical names (Languages), then
// their aliases. It is what an API's enum of languages lists.
func (c Catalog) Spellings() []string {
	var names, aliases []string
	for _, n := range languageNames {
		switch {
		case c.runs(n.canonical) == "":
		case n.spelling == n.canonical:
			names = append(names, n.spelling)
		default:
			aliases = append(aliases, n.spelling)
		}
	}
	return append(names, aliases...)
}

// EnvironmentsOf lists the names of the environments that run lang, in the
// catalog's order.
func (c Catalog) EnvironmentsOf(lang string) []string {
	var out []string
	for _, e := range c {
		if slices.Contains(e.Languages, lang) {
			out = append(out, e.Name)
		}
	}
	return out
}

// offered says which languages some environment runs, canonical names
// first, then their aliases, for the message of an unknown language.
func (c Catalog) offered() string {
	names, all := c.Languages(), c.Spellings()
	if len(names) == 0 {
		return "this service runs no language"
	}
	if len(all) == len(names) {
		return "this service runs " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("this service runs %s (also %s)", strings.Join(names, ", "), strings.Join(all[len(names):], ", "))
}

// maxQuotedName is the most bytes of a refused name a message repeats: a
// request may send a megabyte in the field, and its answer need not.
const maxQuotedName = 64

// quoteName is a refused name as a message quotes it (Go's %q: control
// characters and invalid UTF-8 escaped), cut at maxQuotedName bytes on a
// rune boundary.
func quoteName(name string) string {
	if len(name) <= maxQuotedName {
		return strconv.Quote(name)
	}
	cut := maxQuotedName
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return strconv.Quote(name[:cut]) + fmt.Sprintf("… (%d bytes)", len(name))
}
