package sandboxd

import "testing"

// TestNormalizeLanguage: every alias, any case, spaces around; an empty or
// unknown name is no language.
func TestNormalizeLanguage(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"python", LanguagePython, true},
		{"python3", LanguagePython, true},
		{" Python3\n", LanguagePython, true},
		{"javascript", LanguageJavaScript, true},
		{"JS", LanguageJavaScript, true},
		{"node", LanguageJavaScript, true},
		{"typescript", LanguageTypeScript, true},
		{"\tts ", LanguageTypeScript, true},
		{"bash", LanguageBash, true},
		{"SH", LanguageBash, true},
		{"", "", false},
		{"  ", "", false},
		{"ruby", "", false},
		{"python 3", "", false},
		{"nodejs", "", false},
	} {
		got, ok := NormalizeLanguage(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("NormalizeLanguage(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestHomeEnvironment: python and bash live in python, javascript and
// typescript in node, anything else nowhere.
func TestHomeEnvironment(t *testing.T) {
	for lang, want := range map[string]string{LanguagePython: "python", LanguageBash: "python",
		LanguageJavaScript: "node", LanguageTypeScript: "node", "ruby": "", "": ""} {
		if got := HomeEnvironment(lang); got != want {
			t.Errorf("HomeEnvironment(%q) = %q, want %q", lang, got, want)
		}
	}
}
