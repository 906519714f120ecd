package sandboxd

import (
	"errors"
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
