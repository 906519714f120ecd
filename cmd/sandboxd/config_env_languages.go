package main

import (
	"fmt"
	"slices"
	"strings"

	"sandboxd"
)

// languageNames are the canonical names of the languages, as an
// environment's languages key lists them.
var languageNames = []string{sandboxd.LanguagePython, sandboxd.LanguageJavaScript, sandboxd.LanguageTypeScript,
	sandboxd.LanguageBash}

// minJavaScriptMemory is the least memory of an environment that runs
// javascript (or typescript, which runs as javascript): a warm Node stub
// holds 58 MiB before any program, 43 MiB of it file pages (libnode, ICU)
// that the cgroup counts and the data limit does not, so a smaller limit
// fills before the data limit fails an allocation.
const minJavaScriptMemory = 192 << 20

// languageErrors checks environments.<name>.languages: not empty, each a
// canonical name (sandboxd.NormalizeLanguage's, so that what discovery
// lists is what the file says), none twice, typescript only beside
// javascript; and environments.<name>.memory where javascript runs.
func languageErrors(name string, e EnvironmentConfig) []error {
	key := "config: environments." + name + ".languages: "
	if len(e.Languages) == 0 {
		return []error{fmt.Errorf("%sis empty; list the languages the environment runs, its default first, e.g. [%s]",
			key, sandboxd.LanguagePython)}
	}
	var errs []error
	for i, l := range e.Languages {
		canonical, ok := sandboxd.NormalizeLanguage(l)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s%q is not a language; use %s", key, l, strings.Join(languageNames, ", ")))
		case canonical != l:
			errs = append(errs, fmt.Errorf("%s%q: write its canonical name, %s", key, l, canonical))
		case slices.Contains(e.Languages[:i], l):
			errs = append(errs, fmt.Errorf("%s%s is listed twice", key, l))
		}
	}
	js := slices.Contains(e.Languages, sandboxd.LanguageJavaScript)
	if slices.Contains(e.Languages, sandboxd.LanguageTypeScript) && !js {
		errs = append(errs, fmt.Errorf("%stypescript needs javascript, which it runs as once transpiled: list javascript too", key))
	}
	if (js || slices.Contains(e.Languages, sandboxd.LanguageTypeScript)) && e.MemoryBytes < minJavaScriptMemory {
		errs = append(errs, fmt.Errorf("config: environments.%s.memory: %d bytes is under %dMiB, the least for an environment "+
			"that runs javascript (Node.js holds some 58 MiB before any program)", name, e.MemoryBytes, minJavaScriptMemory>>20))
	}
	return errs
}
