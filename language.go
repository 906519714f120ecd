package sandboxd

import "strings"

// The languages, by their canonical names: what a Result's Lang and a
// session's Language say, whatever spelling the request used.
const (
	// LanguagePython is Python 3.
	LanguagePython = "python"
	// LanguageJavaScript is JavaScript on Node.js.
	LanguageJavaScript = "javascript"
	// LanguageTypeScript is TypeScript, transpiled to JavaScript (not
	// type-checked) before it runs on Node.js.
	LanguageTypeScript = "typescript"
	// LanguageBash is a Bash script.
	LanguageBash = "bash"
)

// languageNames maps every accepted spelling, lower-cased, to its
// canonical name. Its order is the order messages list the names in:
// each canonical name, then its aliases.
var languageNames = []struct{ spelling, canonical string }{
	{LanguagePython, LanguagePython},
	{LanguageJavaScript, LanguageJavaScript},
	{LanguageTypeScript, LanguageTypeScript},
	{LanguageBash, LanguageBash},
	{"python3", LanguagePython},
	{"js", LanguageJavaScript},
	{"node", LanguageJavaScript},
	{"ts", LanguageTypeScript},
	{"sh", LanguageBash},
}

// NormalizeLanguage maps a spelling of a language (a canonical name or an
// alias, in any case, with spaces around it or not) to its canonical name,
// and reports whether it names a language at all. An empty string names
// none: a request without a language is Catalog.Resolve's to settle.
func NormalizeLanguage(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, n := range languageNames {
		if n.spelling == s {
			return n.canonical, true
		}
	}
	return "", false
}

// HomeEnvironment is the environment a language runs in when a request
// names no environment: python for Python and Bash (Bash's image is then
// the smaller one, and python3 is what a shell program most often calls),
// node for JavaScript and TypeScript; "" for anything else.
func HomeEnvironment(language string) string {
	switch language {
	case LanguagePython, LanguageBash:
		return DefaultEnvironment
	case LanguageJavaScript, LanguageTypeScript:
		return "node"
	}
	return ""
}
