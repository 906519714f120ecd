package runnerproto

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// record is one framed file: kind 'c' with its content, or 'l' listed
// with its size.
func record(kind byte, name string, size int, content string) string {
	return string(AppendRecord(nil, kind, name, int64(size))) + content
}

func TestParseRecords(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n0000"
	section := []byte(record('c', "a/chart.png", len(png), png) + record('l', "big.csv", 1<<30, "") +
		record('c', "notes.txt", 3, "hi\n") + record('c', "empty", 0, ""))
	got, err := ParseRecords(section, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{Kind: KindContent, Name: "a/chart.png", Size: int64(len(png)), Content: []byte(png)},
		{Kind: KindListed, Name: "big.csv", Size: 1 << 30},
		{Kind: KindContent, Name: "notes.txt", Size: 3, Content: []byte("hi\n")},
		{Kind: KindContent, Name: "empty", Size: 0, Content: []byte{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseRecords = %+v\nwant %+v", got, want)
	}
	if got, err := ParseRecords(nil, 0); err != nil || len(got) != 0 {
		t.Errorf("ParseRecords(nil) = %v, %v; want nothing", got, err)
	}
	if _, err := ParseRecords(section, 3); err == nil {
		t.Error("four records taken where three may be")
	}
}

// TestParseRecordsRefusesForgeries feeds sections a program could forge on
// its stdout: each must be refused whole.
func TestParseRecordsRefusesForgeries(t *testing.T) {
	for name, in := range map[string]string{
		"content past the section": record('c', "a", 5, "xy"),
		"absolute":                 record('c', "/etc/passwd", 1, "x"),
		"dot-dot":                  record('c', "a/../../etc", 1, "x"),
		"NUL":                      record('c', "a\x00b", 1, "x"),
		"newline":                  record('c', "a\nb", 1, "x"),
		"not UTF-8":                record('c', "a\xffb", 1, "x"),
		"name too long":            record('c', strings.Repeat("a/", 600)+"a", 1, "x"),
		"unknown kind":             "x 1 1\nab",
		"no header":                "c 1 1",
		"header too long":          "c 1 " + strings.Repeat("0", 40) + "1\nax",
		"negative":                 "c 1 -1\na",
		"size overflows":           "c 1 99999999999999999999\na",
		"name past the section":    "c 9 0\nab",
		"two spaces":               "c  1 1\nax",
		"leading zero":             "c 1 01\nax",
		"too many records":         strings.Repeat("l 1 0\na", 100),
	} {
		if got, err := ParseRecords([]byte(in), 66); err == nil {
			t.Errorf("%s: ParseRecords = %+v, want an error", name, got)
		}
	}
}

// FuzzParseRecords feeds arbitrary sections (a program can forge one on its
// stdout) with an arbitrary count. It must never panic; what it takes has
// at most count records, names valid, every content a slice of the
// section, and AppendRecord writes it back byte for byte.
func FuzzParseRecords(f *testing.F) {
	for _, seed := range []string{
		"", record('c', "a.txt", 2, "hi") + record('l', "b.bin", 1<<40, ""),
		record('c', "d/e/f.png", 8, "\x89PNG\r\n\x1a\n"), "c 1 99999999999999999999\na", "c 3 1\n../x",
		strings.Repeat("l 1 0\na", 3),
	} {
		f.Add([]byte(seed), uint8(2))
	}
	f.Fuzz(func(t *testing.T, in []byte, count uint8) {
		recs, err := ParseRecords(in, int(count))
		if err != nil {
			if recs != nil {
				t.Fatalf("an error with records %+v", recs)
			}
			return
		}
		if len(recs) > int(count) {
			t.Fatalf("%d records, over %d", len(recs), count)
		}
		var back []byte
		for _, r := range recs {
			if why := ValidName(r.Name); why != "" {
				t.Fatalf("took the name %q: %s", r.Name, why)
			}
			back = AppendRecord(back, r.Kind, r.Name, r.Size)
			switch {
			case r.Kind == KindListed && r.Content == nil:
			case r.Kind == KindContent && int64(len(r.Content)) == r.Size && bytes.Contains(in, r.Content):
				back = append(back, r.Content...)
			default:
				t.Fatalf("record %+v: content not its size, or not from the section", r)
			}
		}
		if !bytes.Equal(back, in) {
			t.Fatalf("%q written back as %q", in, back)
		}
	})
}
