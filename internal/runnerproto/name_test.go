package runnerproto

import (
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestValidName(t *testing.T) {
	for _, ok := range []string{"a", "sales.csv", "a/b/c.txt", "é.txt", "a b", "...", ".a", "a/.../b",
		strings.Repeat("x", 255), strings.Repeat("x/", 511) + "x"} {
		if why := ValidName(ok); why != "" {
			t.Errorf("ValidName(%q) = %q, want valid", ok, why)
		}
	}
	for bad, want := range map[string]string{
		"":                              "the name is empty",
		"/a":                            "absolute",
		"a/":                            "empty part",
		"a//b":                          "empty part",
		".":                             `"." or ".."`,
		"..":                            `"." or ".."`,
		"a/./b":                         `"." or ".."`,
		"../a":                          `"." or ".."`,
		"a/..":                          `"." or ".."`,
		"a\x00b":                        "control character",
		"a\x1fb":                        "control character",
		"a\x7fb":                        "control character",
		"a\u0085b":                      "control character",
		"a\\b":                          "backslash",
		"a\xff":                         "not UTF-8",
		strings.Repeat("x", 256):        "a part of the name is 256 bytes, over the limit of 255",
		strings.Repeat("a/", 512) + "a": "the name is 1025 bytes, over the limit of 1024",
	} {
		if why := ValidName(bad); !strings.Contains(why, want) {
			t.Errorf("ValidName(%q) = %q, want it to say %q", bad, why, want)
		}
	}
}

// FuzzValidName feeds arbitrary names. A name taken is a clean relative
// path that, joined to a directory, stays inside it, UTF-8 with no
// control character or backslash, within the length limits.
func FuzzValidName(f *testing.F) {
	for _, seed := range []string{"sales.csv", "a/b/c.txt", "", "/etc/passwd", "..", "../x", "a/..", "./a", "a//b",
		"a/", `a\b`, "a\x00b", "a\nb", "a\u0085b", "\xff\xfe", "é/ü.png", strings.Repeat("x", 256),
		strings.Repeat("x/", 600), " ", "...", ".a", "a/./b", "a/.../b"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if ValidName(name) != "" {
			return
		}
		joined := filepath.Join("/tmp/work", name)
		if path.Clean(name) != name || path.IsAbs(name) || joined != "/tmp/work/"+name {
			t.Fatalf("took %q, which joins to %q", name, joined)
		}
		if len(name) > MaxNameBytes || !utf8.ValidString(name) || strings.ContainsAny(name, "\\\x00") ||
			strings.IndexFunc(name, unicode.IsControl) >= 0 {
			t.Fatalf("took %q", name)
		}
		for part := range strings.SplitSeq(name, "/") {
			if len(part) > MaxPartBytes {
				t.Fatalf("took %q with the part %q", name, part)
			}
		}
	})
}
