package hostile

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"sandboxd"
)

// files is a shorthand for a list of expected files out.
func files(f ...sandboxd.File) []sandboxd.File { return f }

// kept is a file out returned with its content.
func kept(name, content string) sandboxd.File {
	return sandboxd.File{Name: name, Content: []byte(content), Size: int64(len(content))}
}

// listed is a file out listed by name and size, without content.
func listed(name string, size int64) sandboxd.File {
	return sandboxd.File{Name: name, Size: size}
}

// filesAnswer is the answer of a program that ends well with exactly the
// files out want (names, sizes, contents) and files_truncated as given,
// and, if given, that stdout.
func filesAnswer(want []sandboxd.File, truncated bool, stdout ...string) answer {
	return answer{status: statuses(sandboxd.StatusOK), exit: []int{0}, stdout: stdout, check: withinAnd(func(res sandboxd.Result) []string {
		var d []string
		if res.FilesTruncated != truncated {
			d = append(d, fmt.Sprintf("files_truncated %v, want %v", res.FilesTruncated, truncated))
		}
		if describe(res.Files) != describe(want) {
			d = append(d, fmt.Sprintf("files out %s, want %s", describe(res.Files), describe(want)))
		}
		return d
	})}
}

// holds returns a check that the files out keep to the contract and hold
// each of want as given, whatever else they hold.
func holds(want ...sandboxd.File) func(sandboxd.Result) []string {
	return withinAnd(func(res sandboxd.Result) []string {
		var d []string
		for _, w := range want {
			if !containsFile(res.Files, w) {
				d = append(d, fmt.Sprintf("files out %s do not hold %s", describe(res.Files), describe([]sandboxd.File{w})))
			}
		}
		return d
	})
}

// holdsOnly returns a check that the files out are exactly want, whatever
// files_truncated says.
func holdsOnly(want ...sandboxd.File) func(sandboxd.Result) []string {
	return withinAnd(func(res sandboxd.Result) []string {
		if describe(res.Files) != describe(want) {
			return []string{fmt.Sprintf("files out %s, want %s", describe(res.Files), describe(want))}
		}
		return nil
	})
}

// firstKept returns a check that the files out, named by nameFormat and
// holding contentFormat of their number, begin with the first n carrying
// their content, that no more carry it, and that files_truncated says so.
func firstKept(n int, nameFormat, contentFormat string) func(sandboxd.Result) []string {
	return withinAnd(func(res sandboxd.Result) []string {
		var d []string
		if !res.FilesTruncated {
			d = append(d, "files_truncated false, with more files than max_files")
		}
		if len(res.Files) < n {
			return append(d, fmt.Sprintf("%d files out, want at least max_files (%d)", len(res.Files), n))
		}
		for i, f := range res.Files {
			if i < n && (f.Name != fmt.Sprintf(nameFormat, i) || string(f.Content) != fmt.Sprintf(contentFormat, i)) {
				d = append(d, fmt.Sprintf("file out %d is %s, want %q with its content", i, describe(res.Files[i:i+1]), fmt.Sprintf(nameFormat, i)))
			}
			if i >= n && f.Content != nil {
				d = append(d, fmt.Sprintf("file out %d (%s) carries its content past max_files", i, f.Name))
			}
		}
		return d
	})
}

// withinAnd returns a check of filesWithin and then of more.
func withinAnd(more func(sandboxd.Result) []string) func(sandboxd.Result) []string {
	return func(res sandboxd.Result) []string {
		return append(filesWithin(res), more(res)...)
	}
}

// filesWithin lists where the files out break the files-out contract
// whatever the program did: at most max_files with content and
// max_files_bytes of it in all, in strict name order, each name one a file
// in could have (relative, no empty, "." or ".." part, no control
// character or backslash, UTF-8, parts of at most 255 bytes, at most 1024
// in all), a size that is its content's when it has one, and no content
// that is the system's (a followed link to /etc/passwd).
func filesWithin(res sandboxd.Result) []string {
	var d []string
	var withContent int
	var bytesOut int64
	for i, f := range res.Files {
		if why := badName(f.Name); why != "" {
			d = append(d, fmt.Sprintf("file out %q: the name %s", f.Name, why))
		}
		if i > 0 && f.Name <= res.Files[i-1].Name {
			d = append(d, fmt.Sprintf("file out %q after %q: not in name order", f.Name, res.Files[i-1].Name))
		}
		if f.Content != nil {
			withContent++
			bytesOut += int64(len(f.Content))
			if f.Size != int64(len(f.Content)) {
				d = append(d, fmt.Sprintf("file out %q: size %d, content %d bytes", f.Name, f.Size, len(f.Content)))
			}
			if bytes.Contains(f.Content, []byte("root:x:0:0")) {
				d = append(d, fmt.Sprintf("file out %q holds the system's /etc/passwd", f.Name))
			}
		}
	}
	if withContent > maxFiles || bytesOut > maxFilesBytes {
		d = append(d, fmt.Sprintf("%d files out with %d bytes of content, over the caps (%d files, %d bytes)", withContent, bytesOut, maxFiles, maxFilesBytes))
	}
	return d
}

// badName says what is wrong with a file name by the contract's rules, or
// "" when nothing is.
func badName(name string) string {
	switch {
	case name == "" || len(name) > 1024:
		return "is empty or over 1024 bytes"
	case !utf8.ValidString(name):
		return "is not UTF-8"
	case strings.HasPrefix(name, "/"):
		return "is absolute"
	case strings.ContainsRune(name, '\\'):
		return "holds a backslash"
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }):
		return "holds a control character"
	}
	for part := range strings.SplitSeq(name, "/") {
		if part == "" || part == "." || part == ".." || len(part) > 255 {
			return fmt.Sprintf("has a part %q", clip(part))
		}
	}
	return ""
}

// containsFile reports whether fs holds a file of w's name, size and
// content (nil content: listed without it).
func containsFile(fs []sandboxd.File, w sandboxd.File) bool {
	for _, f := range fs {
		if f.Name == w.Name && f.Size == w.Size && (f.Content == nil) == (w.Content == nil) && bytes.Equal(f.Content, w.Content) {
			return true
		}
	}
	return false
}

// describe writes files out as one comparable line: each name, size, and
// its content or "listed".
func describe(fs []sandboxd.File) string {
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		content := "listed"
		if f.Content != nil {
			content = fmt.Sprintf("%q", clip(string(f.Content)))
		}
		parts = append(parts, fmt.Sprintf("%q %d %s", clip(f.Name), f.Size, content))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// noneNamed returns a check that no file out has the name.
func noneNamed(name string) func(sandboxd.Result) []string {
	return func(res sandboxd.Result) []string {
		for _, f := range res.Files {
			if f.Name == name {
				return []string{fmt.Sprintf("a file out is named %q", name)}
			}
		}
		return nil
	}
}
