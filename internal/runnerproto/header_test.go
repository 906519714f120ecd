package runnerproto

import (
	"strings"
	"testing"
)

// testToken is a token of the right shape.
var testToken = strings.Repeat("ab", TokenBytes)

func TestHeaderRoundTrip(t *testing.T) {
	h := Header{Token: testToken, Code: 9, Stdin: 2, Files: 2, FilesLen: 24, MaxFiles: 16, MaxFilesBytes: 8 << 20,
		Language: "python"}
	line := string(h.Append(nil))
	if want := testToken + " 9 2 2 24 16 8388608 python\n"; line != want {
		t.Fatalf("Append = %q, want %q", line, want)
	}
	for _, in := range []string{line, strings.TrimSuffix(line, "\n")} {
		if got, err := ParseHeader([]byte(in)); err != nil || got != h {
			t.Errorf("ParseHeader(%q) = %+v, %v; want %+v", in, got, err, h)
		}
	}
	if len(line) > HeaderMax {
		t.Errorf("a header of %d bytes, over HeaderMax %d", len(line), HeaderMax)
	}
	most := Header{Token: testToken, Code: 999999999999999999, Stdin: 999999999999999999, Files: 999999999999999999,
		FilesLen: 999999999999999999, MaxFiles: 999999999999999999, MaxFilesBytes: 999999999999999999,
		Language: strings.Repeat("z", maxLanguageBytes)}
	if n := len(most.Append(nil)); n != HeaderMax {
		t.Errorf("the longest header is %d bytes, HeaderMax %d", n, HeaderMax)
	}
}

// TestParseHeaderRefuses feeds lines that are not headers, protocol 6's
// among them: each is an error.
func TestParseHeaderRefuses(t *testing.T) {
	ok := testToken + " 9 2 2 24 16 100 python"
	for name, line := range map[string]string{
		"protocol 6":          testToken + " 9 2 2 24 16 100",
		"a field extra":       ok + " x",
		"empty":               "",
		"no language":         testToken + " 9 2 2 24 16 100 ",
		"two spaces":          strings.Replace(ok, " ", "  ", 1),
		"language upper-case": strings.Replace(ok, "python", "Python", 1),
		"language with digit": strings.Replace(ok, "python", "python3", 1),
		"language too long":   strings.Replace(ok, "python", strings.Repeat("p", 33), 1),
		"language with NUL":   strings.Replace(ok, "python", "py\x00thon", 1),
		"token short":         ok[2:],
		"token upper-case":    strings.ToUpper(testToken) + ok[len(testToken):],
		"token not hex":       strings.Replace(ok, "ab", "xy", 1),
		"negative":            strings.Replace(ok, " 9 ", " -9 ", 1),
		"plus":                strings.Replace(ok, " 9 ", " +9 ", 1),
		"leading zero":        strings.Replace(ok, " 9 ", " 09 ", 1),
		"19 digits":           strings.Replace(ok, " 9 ", " 1000000000000000000 ", 1),
		"empty number":        strings.Replace(ok, " 9 ", "  ", 1),
		"CRLF":                ok + "\r\n",
		"two newlines":        ok + "\n\n",
		"session header":      "S " + testToken + " 100 python",
	} {
		if h, err := ParseHeader([]byte(line)); err == nil {
			t.Errorf("%s: ParseHeader(%q) = %+v, want an error", name, line, h)
		}
	}
}

func TestSessionHeader(t *testing.T) {
	h := SessionHeader{Token: testToken, MaxValue: 65536, Language: "bash"}
	line := string(h.Append(nil))
	if want := "S " + testToken + " 65536 bash\n"; line != want {
		t.Fatalf("Append = %q, want %q", line, want)
	}
	for _, in := range []string{line, strings.TrimSuffix(line, "\n")} {
		if got, err := ParseSessionHeader([]byte(in)); err != nil || got != h {
			t.Errorf("ParseSessionHeader(%q) = %+v, %v; want %+v", in, got, err, h)
		}
	}
	for _, bad := range []string{
		"S " + testToken + " 65536",            // protocol 6's
		"S " + testToken + " 65536 bash extra", // a field extra
		"s " + testToken + " 65536 bash",
		"S " + testToken[1:] + " 65536 bash",
		"S " + testToken + " -1 bash",
		"S " + testToken + " 65536 ",
		"S " + testToken + " 65536 Bash",
		testToken + " 9 2 2 24 16 100 python",
	} {
		if got, err := ParseSessionHeader([]byte(bad)); err == nil {
			t.Errorf("ParseSessionHeader(%q) = %+v, want an error", bad, got)
		}
	}
}

// FuzzParseHeader feeds arbitrary lines to both header parsers. Neither
// may panic, and what one takes is written back by Append byte for byte,
// its newline added: a header has one spelling.
func FuzzParseHeader(f *testing.F) {
	for _, seed := range []string{
		testToken + " 9 2 2 24 16 100 python\n", testToken + " 9 2 2 24 16 100", "S " + testToken + " 65536 bash\n",
		"S " + testToken + " 65536", "", "\n", " ", "S", testToken + " 0 0 0 0 0 0 javascript",
		testToken + " 999999999999999999 0 0 0 0 0 typescript",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		canon := strings.TrimSuffix(string(line), "\n") + "\n"
		if h, err := ParseHeader(line); err == nil {
			if got := string(h.Append(nil)); got != canon {
				t.Fatalf("ParseHeader(%q) = %+v, written back as %q", line, h, got)
			}
			if len(canon) > HeaderMax {
				t.Fatalf("took a header of %d bytes, over HeaderMax", len(canon))
			}
		}
		if h, err := ParseSessionHeader(line); err == nil {
			if got := string(h.Append(nil)); got != canon {
				t.Fatalf("ParseSessionHeader(%q) = %+v, written back as %q", line, h, got)
			}
		}
	})
}
