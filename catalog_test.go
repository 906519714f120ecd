package sandboxd

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestCatalogResolve: the three rules of Resolve, and the exact messages
// of its CodeInvalid errors.
func TestCatalogResolve(t *testing.T) {
	full := Catalog{
		{Name: "data", Languages: []string{LanguagePython, LanguageBash}},
		{Name: "node", Languages: []string{LanguageJavaScript, LanguageTypeScript, LanguageBash}},
		{Name: "python", Languages: []string{LanguagePython, LanguageBash}},
	}
	noNode := Catalog{full[0], full[2]}
	away := Catalog{ // no home for bash or javascript: the first by name that runs them
		{Name: "zeta", Languages: []string{LanguageJavaScript, LanguageBash}},
		{Name: "alpha", Languages: []string{LanguageJavaScript, LanguagePython}},
		{Name: "python", Languages: []string{LanguagePython}},
	}
	for _, tc := range []struct {
		name                    string
		c                       Catalog
		language, environment   string
		wantLang, wantEnv, fail string
	}{
		{"default", full, "", "", "python", "python", ""},
		{"blank is absent", full, "  ", " ", "python", "python", ""},
		{"alias home", full, "JS", "", "javascript", "node", ""},
		{"typescript home", full, "ts", "", "typescript", "node", ""},
		{"bash home", full, "sh", "", "bash", "python", ""},
		{"python3 home", full, "python3", "", "python", "python", ""},
		{"environment's first", full, "", "node", "javascript", "node", ""},
		{"environment cased", full, "", " Data ", "python", "data", ""},
		{"listed", full, "bash", "node", "bash", "node", ""},
		{"home away", away, "js", "", "javascript", "alpha", ""},
		{"bash away", away, "bash", "", "bash", "zeta", ""},
		{"unknown", full, "Ruby", "", "", "",
			`language "ruby" is not supported; this service runs python, javascript, typescript, bash ` +
				`(also python3, js, node, ts, sh)`},
		{"unknown lists what runs", noNode, "ruby", "node", "", "",
			`language "ruby" is not supported; this service runs python, bash (also python3, sh)`},
		{"not listed", full, "javascript", "data", "", "",
			`environment "data" runs python, bash; javascript runs in node`},
		{"not listed, runs nowhere", noNode, "javascript", "data", "", "",
			`environment "data" runs python, bash; javascript is not offered here`},
		{"not offered", noNode, "node", "", "", "", "javascript is not offered here"},
		{"not configured", full, "python", "gpu", "", "",
			`environment "gpu" is not configured; use one of: data, node, python`},
		{"default not configured", Catalog{full[1]}, "", "", "", "",
			`environment "python" is not configured; use one of: node`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lang, env, err := tc.c.Resolve(tc.language, tc.environment)
			if tc.fail == "" {
				if err != nil || lang != tc.wantLang || env != tc.wantEnv {
					t.Fatalf("Resolve(%q, %q) = %q, %q, %v; want %q, %q", tc.language, tc.environment,
						lang, env, err, tc.wantLang, tc.wantEnv)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalid || e.Message != tc.fail || lang != "" || env != "" {
				t.Fatalf("Resolve(%q, %q) = %q, %q, %v; want the 400 %q", tc.language, tc.environment,
					lang, env, err, tc.fail)
			}
		})
	}
}

// TestCatalogLists: what a catalog offers, as the API's enums and tools
// list it, and the message of an unknown language when one language runs.
func TestCatalogLists(t *testing.T) {
	c := Catalog{
		{Name: "data", Languages: []string{LanguagePython}},
		{Name: "node", Languages: []string{LanguageJavaScript, LanguageBash}},
		{Name: "python", Languages: []string{LanguagePython, LanguageBash}},
	}
	if got, want := c.Languages(), []string{"python", "javascript", "bash"}; !slices.Equal(got, want) {
		t.Errorf("Languages = %q, want %q", got, want)
	}
	if got, want := c.Spellings(), []string{"python", "javascript", "bash", "python3", "js", "node", "sh"}; !slices.Equal(got, want) {
		t.Errorf("Spellings = %q, want %q", got, want)
	}
	if got, want := c.EnvironmentsOf(LanguageBash), []string{"node", "python"}; !slices.Equal(got, want) {
		t.Errorf("EnvironmentsOf(bash) = %q, want %q", got, want)
	}
	if got := c.EnvironmentsOf(LanguageTypeScript); got != nil {
		t.Errorf("EnvironmentsOf(typescript) = %q, want none", got)
	}
	if got := (Catalog{}).Languages(); got != nil {
		t.Errorf("an empty catalog offers %q", got)
	}
	_, _, err := (Catalog{}).Resolve("ruby", "")
	if msg := ErrorMessage(err); msg != `language "ruby" is not supported; this service runs no language` {
		t.Errorf("empty catalog: %q", msg)
	}
}

// TestResolveQuotesHostileNames: a refused name is quoted escaped and cut,
// whatever its size and bytes, so that a 400 never repeats a megabyte nor
// carries a raw control character.
func TestResolveQuotesHostileNames(t *testing.T) {
	c := Catalog{{Name: "python", Languages: []string{LanguagePython}}}
	huge := strings.Repeat("é", 1<<19)
	for _, tc := range []struct{ name, language, environment, want string }{
		{"huge language", huge, "", `language "` + strings.Repeat("é", 32) + `"… (1048576 bytes) is not supported; ` +
			`this service runs python (also python3)`},
		{"huge environment", "", huge, `environment "` + strings.Repeat("é", 32) + `"… (1048576 bytes) is not ` +
			`configured; use one of: python`},
		{"nul", "py\x00thon", "", `language "py\x00thon" is not supported; this service runs python (also python3)`},
		{"newline", "", "py\nthon", `environment "py\nthon" is not configured; use one of: python`},
		{"invalid utf-8", "\xff\xfe", "", "language \"\uFFFD\uFFFD\" is not supported; this service runs python (also python3)"},
		{"cut inside a rune", strings.Repeat("a", 63) + "é", "", `language "` + strings.Repeat("a", 63) +
			`"… (65 bytes) is not supported; this service runs python (also python3)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := c.Resolve(tc.language, tc.environment)
			if ErrorCode(err) != CodeInvalid || ErrorMessage(err) != tc.want {
				t.Fatalf("Resolve = %v; want the 400 %q", err, tc.want)
			}
		})
	}
}
