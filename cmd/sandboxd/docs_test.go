package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// repoTop is the repository's top directory, from this package's.
const repoTop = "../.."

// The README's promises to its reader: short enough to read in minutes, and lines that fit
// a terminal and a review tool.
const (
	maxREADMELines = 150
	maxDocLineLen  = 120
)

// docsPage matches a page of docs/ named in a help text.
var docsPage = regexp.MustCompile(`docs/[a-z0-9-]+\.md`)

// TestDocsStayShort: the README is under maxREADMELines lines, and no line of it or of a
// page of docs/ reaches maxDocLineLen characters.
func TestDocsStayShort(t *testing.T) {
	readme := mustRead(t, "README.md")
	if n := strings.Count(readme, "\n"); n >= maxREADMELines {
		t.Errorf("README.md has %d lines, want under %d: move details to a page of docs/", n, maxREADMELines)
	}
	pages, err := filepath.Glob(filepath.Join(repoTop, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages in docs/ (%v)", err)
	}
	files := []string{"README.md"}
	for _, p := range pages {
		files = append(files, filepath.Join("docs", filepath.Base(p)))
	}
	for _, f := range files {
		for i, line := range strings.Split(mustRead(t, f), "\n") {
			if n := utf8.RuneCountInString(line); n >= maxDocLineLen {
				t.Errorf("%s:%d is %d characters, want under %d: %.60s...", f, i+1, n, maxDocLineLen, line)
			}
		}
	}
}

// mustRead is the text of a file of the repository.
func mustRead(tb testing.TB, name string) string {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(repoTop, name))
	if err != nil {
		tb.Fatal(err)
	}
	return string(raw)
}

// TestHelpNamesItsDocsPage: sandboxd's --help and each subcommand's say what it does, show
// an example, exit 0 on stdout, and name a page of docs/ that exists.
func TestHelpNamesItsDocsPage(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"help"}, {"serve", "--help"}, {"call", "--help"}, {"call", "-h"}, {"ledger", "--help"},
		{"ledger", "stats", "--help"}, {"ledger", "list", "--help"}, {"ledger", "channels", "--help"},
		{"ledger", "claim", "-h"}, {"ledger", "answers", "--help"}, {"version", "--help"},
		{"session", "--help"}, {"session", "open", "--help"}, {"session", "show", "--help"}, {"session", "close", "-h"},
		{"channel", "--help"}, {"channel", "show", "--help"}, {"channel", "refund", "-h"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr.String())
			}
			out := stdout.String()
			if !strings.Contains(out, "usage:") || !strings.Contains(out, "example:") {
				t.Errorf("the help has no usage or no example:\n%s", out)
			}
			pages := docsPage.FindAllString(out, -1)
			if len(pages) == 0 {
				t.Errorf("the help names no page of docs/:\n%s", out)
			}
			for _, p := range pages {
				if _, err := os.Stat(filepath.Join(repoTop, p)); err != nil {
					t.Errorf("the help names %s: %v", p, err)
				}
			}
		})
	}
}

// TestHelpAfterABadFlag: a flag the command does not have exits 2 and prints the help on
// stderr, not stdout (a script reading stdout gets nothing it could take for output).
func TestHelpAfterABadFlag(t *testing.T) {
	for _, args := range [][]string{{"serve", "--nope"}, {"call", "--nope"}, {"ledger", "list", "--nope"},
		{"ledger", "channels", "--nope"}, {"ledger", "claim", "--nope"}, {"ledger", "answers", "--nope"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
		if stdout.Len() != 0 || !strings.Contains(stderr.String(), "usage:") ||
			!strings.Contains(stderr.String(), "-nope") {
			t.Errorf("%q: stdout %q, stderr %q; want the error and the help on stderr", args, stdout.String(), stderr.String())
		}
	}
}
