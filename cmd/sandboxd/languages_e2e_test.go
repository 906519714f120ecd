package main

import (
	"encoding/base64"
	"net/http"
	"testing"

	"sandboxd/internal/testenv"
)

// languagePrograms are one language's programs for TestLanguages, each the
// language's own way of doing what the others do.
type languagePrograms struct {
	lang    string   // the canonical name
	aliases []string // other spellings, answered with lang
	hello   string   // prints "hello 42\n"
	fail    string   // writes "boom\n" on stderr and exits 3
	loop    string   // never ends
	stdin   string   // writes its stdin upper-cased
	files   string   // writes in.txt upper-cased, then "!", into out.txt
	session []sessionStep
}

// languages are the programs of JavaScript, TypeScript and Bash. The
// TypeScript ones carry type annotations, which JavaScript would refuse:
// they prove the program was transpiled.
var languages = []languagePrograms{{
	lang:    "javascript",
	aliases: []string{"js", "node", " JavaScript "},
	hello:   `console.log("hello", 6 * 7)`,
	fail:    `console.error("boom"); process.exitCode = 3`,
	loop:    `for (;;) {}`,
	stdin:   `process.stdout.write(require("node:fs").readFileSync(0, "utf8").toUpperCase())`,
	files:   `const fs = require("node:fs"); fs.writeFileSync("out.txt", fs.readFileSync("in.txt", "utf8").toUpperCase() + "!")`,
	session: javascriptSession,
}, {
	lang:    "typescript",
	aliases: []string{"ts"},
	hello:   `const n: number = 6 * 7; console.log("hello", n)`,
	fail:    `const e: string = "boom"; console.error(e); process.exit(3)`,
	loop:    `let i: number = 0; for (;;) { i++ }`,
	stdin:   "import { readFileSync } from \"node:fs\";\nconst s: string = readFileSync(0, \"utf8\");\nprocess.stdout.write(s.toUpperCase())",
	files:   "import * as fs from \"node:fs\";\nconst s: string = fs.readFileSync(\"in.txt\", \"utf8\");\nfs.writeFileSync(\"out.txt\", s.toUpperCase() + \"!\")",
	session: typescriptSession,
}, {
	lang:    "bash",
	aliases: []string{"sh"},
	hello:   `echo hello $((6 * 7))`,
	fail:    `echo boom >&2; exit 3`,
	loop:    `while :; do :; done`,
	stdin:   `tr a-z A-Z`,
	files:   `printf '%s!' "$(tr a-z A-Z < in.txt)" > out.txt`,
	session: bashSession,
}}

// languagesTimeout is the node environment's timeout in TestLanguages:
// short, so the loops end soon, and long enough for a session's first
// import on a loaded host.
const languagesTimeout = "SANDBOX_ENVIRONMENTS_NODE_TIMEOUT=3s"

// TestLanguages: through the real binary, Docker and the node image, each
// of JavaScript, TypeScript and Bash runs over HTTP in the default
// configuration (data off, node's timeout 3 s): a program prints (ok), fails (its exit code and stderr),
// loops (timeout), reads its stdin, turns a file sent in into a file out
// in its working directory; every alias is answered with the canonical
// lang, in node (bash too: python's environment does not run it); the
// python environment named for it is §2.1's 400 naming node; and a session
// of each keeps its state across calls (languages_sessions_e2e_test.go).
func TestLanguages(t *testing.T) {
	testenv.RequireIntegration(t)
	s := startService(t, uniqueInstance(t), noData, languagesTimeout)
	for _, l := range languages {
		t.Run(l.lang, func(t *testing.T) {
			t.Run("one-shot", func(t *testing.T) { checkOneShots(t, s, l) })
			t.Run("aliases", func(t *testing.T) { checkAliases(t, s, l) })
			t.Run("session", func(t *testing.T) { checkSession(t, s, l.lang, l.session) })
		})
	}
}

// languageRun is a body of POST /v1/code in TestLanguages.
type languageRun struct {
	Language    string              `json:"language"`
	Code        string              `json:"code"`
	Stdin       string              `json:"stdin,omitempty"`
	Environment string              `json:"environment,omitempty"`
	Files       []map[string]string `json:"files,omitempty"`
}

// mustRun posts run and checks it was delivered in node as lang.
func (s *service) mustRun(t *testing.T, lang string, run languageRun) answer {
	t.Helper()
	status, a, _, err := s.sendBody(run)
	if err != nil || status != http.StatusOK || a.Lang != lang || a.Environment != "node" {
		t.Fatalf("%q: %d %+v (%v), want a run of %s in node", run.Code, status, a, err, lang)
	}
	return a
}

// checkOneShots runs l's one-shot programs and checks each answer.
func checkOneShots(t *testing.T, s *service, l languagePrograms) {
	a := s.mustRun(t, l.lang, languageRun{Language: l.lang, Code: l.hello})
	if a.Status != "ok" || a.ExitCode != 0 || a.Stdout != "hello 42\n" || a.Stderr != "" {
		t.Errorf("hello: %+v", a)
	}
	a = s.mustRun(t, l.lang, languageRun{Language: l.lang, Code: l.fail})
	if a.Status != "error" || a.ExitCode != 3 || a.Stdout != "" || a.Stderr != "boom\n" {
		t.Errorf("fail: %+v, want exit 3 and boom on stderr", a)
	}
	a = s.mustRun(t, l.lang, languageRun{Language: l.lang, Code: l.loop})
	if a.Status != "timeout" || !a.TimedOut {
		t.Errorf("loop: %+v, want a timeout", a)
	}
	a = s.mustRun(t, l.lang, languageRun{Language: l.lang, Code: l.stdin, Stdin: "abc\nxyz\n"})
	if a.Status != "ok" || a.Stdout != "ABC\nXYZ\n" {
		t.Errorf("stdin: %+v, want it upper-cased", a)
	}
	in := []map[string]string{{"name": "in.txt", "content": base64.StdEncoding.EncodeToString([]byte("files"))}}
	a = s.mustRun(t, l.lang, languageRun{Language: l.lang, Code: l.files, Files: in})
	if f, content, ok := a.File("out.txt"); a.Status != "ok" || !ok || string(content) != "FILES!" || f.Size != 6 {
		t.Errorf("files: %+v, want out.txt holding FILES!", a)
	}
	if _, _, ok := a.File("in.txt"); ok || len(a.Files) != 1 {
		t.Errorf("files out %+v, want out.txt alone (in.txt is unchanged)", a.Files)
	}
}

// checkAliases runs l's hello under each alias, and in the python
// environment, which does not run it.
func checkAliases(t *testing.T, s *service, l languagePrograms) {
	for _, alias := range l.aliases {
		if a := s.mustRun(t, l.lang, languageRun{Language: alias, Code: l.hello}); a.Stdout != "hello 42\n" {
			t.Errorf("%q: %+v", alias, a)
		}
	}
	status, a, _, err := s.sendBody(languageRun{Language: l.lang, Code: l.hello, Environment: "python"})
	want := `environment "python" runs python; ` + l.lang + " runs in node"
	if err != nil || status != http.StatusBadRequest || a.Error != want {
		t.Errorf("in python: %d %q (%v), want 400 %q", status, a.Error, err, want)
	}
}
