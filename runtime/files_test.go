package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"sandboxd"
	"sandboxd/internal/runnerproto"
)

// record is one framed file: kind "c" with its content, or "l" listed with
// its size.
func record(kind byte, name string, size int, content string) string {
	return string(runnerproto.AppendRecord(nil, kind, name, int64(size))) + content
}

// section frames the files out as the runner does.
func section(files ...string) []byte {
	return []byte(strings.Join(files, ""))
}

func TestParseFiles(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n0000"
	got, listed, err := parseFiles(section(
		record('c', "a/chart.png", len(png), png),
		record('l', "big.csv", 1<<30, ""),
		record('c', "notes.txt", 3, "hi\n"),
	), 2, 100)
	if err != nil || !listed {
		t.Fatalf("parseFiles: %v, listed %v; want no error, listed", err, listed)
	}
	want := []sandboxd.File{
		{Name: "a/chart.png", Content: []byte(png), Size: int64(len(png)), MediaType: "image/png"},
		{Name: "big.csv", Size: 1 << 30, MediaType: "text/csv"},
		{Name: "notes.txt", Content: []byte("hi\n"), Size: 3, MediaType: "text/plain"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseFiles = %+v\nwant %+v", got, want)
	}
	if got, listed, err := parseFiles(nil, 2, 100); err != nil || listed || len(got) != 0 {
		t.Errorf("parseFiles(nil) = %v, %v, %v; want nothing", got, listed, err)
	}
}

// TestParseFilesRefusesForgeries feeds sections a program could forge on its
// stdout: each must be refused whole, never read past its caps.
func TestParseFilesRefusesForgeries(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
	}{
		{"content over the bytes cap", section(record('c', "a", 101, strings.Repeat("x", 101)))},
		{"content past the section", section(record('c', "a", 5, "xy"))},
		{"over the count cap", section(record('c', "a", 1, "x"), record('c', "b", 1, "x"), record('c', "c", 1, "x"))},
		{"over the bytes cap in all", section(record('c', "a", 60, strings.Repeat("x", 60)), record('c', "b", 60, strings.Repeat("x", 60)))},
		{"out of order", section(record('c', "b", 1, "x"), record('c', "a", 1, "x"))},
		{"twice", section(record('c', "a", 1, "x"), record('l', "a", 1, ""))},
		{"absolute", section(record('c', "/etc/passwd", 1, "x"))},
		{"dot-dot", section(record('c', "a/../../etc", 1, "x"))},
		{"NUL", section(record('c', "a\x00b", 1, "x"))},
		{"newline", section(record('c', "a\nb", 1, "x"))},
		{"not UTF-8", section(record('c', "a\xffb", 1, "x"))},
		{"name too long", section(record('c', strings.Repeat("a/", 600)+"a", 1, "x"))},
		{"unknown kind", []byte("x 1 1\nab")},
		{"no header", []byte("c 1 1")},
		{"header too long", []byte("c 1 " + strings.Repeat("0", 40) + "1\nax")},
		{"negative", []byte("c 1 -1\na")},
		{"size overflows", []byte("c 1 99999999999999999999\na")},
		{"name past the section", []byte("c 9 0\nab")},
		{"too many records", bytes.Repeat([]byte("l 1 0\na"), 100)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := parseFiles(c.in, 2, 100)
			if !errors.Is(err, errFiles) || got != nil {
				t.Errorf("parseFiles = %+v, %v; want errFiles and nothing", got, err)
			}
		})
	}
}

func TestMediaType(t *testing.T) {
	for _, c := range []struct {
		name, content, want string
		listed              bool
	}{
		{"a.png", "\x89PNG\r\n\x1a\nxxxx", "image/png", false},
		{"chart", "\x89PNG\r\n\x1a\nxxxx", "image/png", false},
		{"a.jpg", "\xff\xd8\xff\xe0xx", "image/jpeg", false},
		{"a.gif", "GIF89axx", "image/gif", false},
		{"a.webp", "RIFF\x10\x00\x00\x00WEBPVP8 ", "image/webp", false},
		{"a.pdf", "%PDF-1.7\n", "application/pdf", false},
		{"a.svg", `<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>`, "image/svg+xml", false},
		{"a.svg", "not a drawing", "text/plain", false},
		{"a.csv", "x,y\n1,2\n", "text/csv", false},
		{"a.json", `{"a": 1}`, "application/json", false},
		{"a.txt", "hello\n", "text/plain", false},
		{"a.txt", "", "text/plain", false},
		{"a.png", "not a png", "text/plain", false},
		{"a.png", "\x00\x01binary", "application/octet-stream", false},
		{"a.bin", "\xff\xfe\xfd", "application/octet-stream", false},
		{"big.png", "", "image/png", true},
		{"big.CSV", "", "text/csv", true},
		{"big.bin", "", "application/octet-stream", true},
	} {
		content := []byte(c.content)
		if c.listed {
			content = nil
		}
		if got := mediaType(c.name, content); got != c.want {
			t.Errorf("mediaType(%q, %q) = %q, want %q", c.name, c.content, got, c.want)
		}
	}
	// Text cut in the middle of a character at the sniff's end is text.
	long := strings.Repeat("a", textSniff-1) + "é" + "b"
	if got := mediaType("a.txt", []byte(long)); got != "text/plain" {
		t.Errorf("mediaType(long text) = %q, want text/plain", got)
	}
}

// TestCheckFilesIn proves the runtime does not take a job's files in on
// trust: over the caps, or with a name that could escape /tmp, the run is
// refused before any container is touched.
func TestCheckFilesIn(t *testing.T) {
	d := &Docker{cfg: Config{MaxFiles: 2, MaxFilesBytes: 10}}
	for _, c := range []struct {
		files []sandboxd.File
		code  sandboxd.Code
	}{
		{[]sandboxd.File{{Name: "a"}, {Name: "b"}, {Name: "c"}}, sandboxd.CodeTooLarge},
		{[]sandboxd.File{{Name: "a", Content: make([]byte, 6)}, {Name: "b", Content: make([]byte, 5)}}, sandboxd.CodeTooLarge},
		{[]sandboxd.File{{Name: "../etc/x"}}, sandboxd.CodeInvalid},
		{[]sandboxd.File{{Name: "/tmp/x"}}, sandboxd.CodeInvalid},
	} {
		_, err := d.Run(context.Background(), sandboxd.Job{ID: "t", Code: "pass", Files: c.files})
		var e *sandboxd.Error
		if !errors.As(err, &e) || e.Code != c.code {
			t.Errorf("Run with files %v: %v, want code %s", c.files, err, c.code)
		}
	}
	if err := checkFilesIn([]sandboxd.File{{Name: "a/b", Content: make([]byte, 10)}}, 2, 10); err != nil {
		t.Errorf("checkFilesIn at the caps: %v", err)
	}
}

// TestDemuxFilesSection reads a run whose end marker on stdout is followed
// by its files section, whole and byte by byte: the section is kept apart
// from the output, and the run ends only once it has arrived whole.
func TestDemuxFilesSection(t *testing.T) {
	p := testProtocol()
	sec := record('c', "out.txt", 2, "ok")
	end := fmt.Sprintf("%s%03d %010d %010d %010d 0\n", p.prefix, 0, 5, 6, len(sec))
	in := frames(frame(1, string(p.ack)+"hello\n"), frame(1, end+sec), frame(2, "warn\n"+end))
	wholeAndByteByByte(t, "section", in, func(t *testing.T, r io.Reader) {
		o := newOutput(100, p)
		if err := demux(r, o, func() {}); err != nil {
			t.Fatalf("demux: %v", err)
		}
		rep, ok := o.ended()
		if !ok || rep.FilesLen != int64(len(sec)) || string(o.files.buf) != sec {
			t.Fatalf("ended %v %+v, section %q; want the section %q", ok, rep, o.files.buf, sec)
		}
		o.finish()
		if string(o.stdout.buf) != "hello\n" || string(o.stderr.buf) != "warn\n" {
			t.Errorf("stdout %q stderr %q, want hello and warn alone", o.stdout.buf, o.stderr.buf)
		}
	})
	// Without its whole section, the marker does not end the run.
	o := newOutput(100, p)
	_ = demux(bytes.NewReader(frames(frame(1, string(p.ack)+end+sec[:3]), frame(2, end))), o, func() {})
	if _, ok := o.ended(); ok {
		t.Error("ended with half a files section")
	}
}

// TestDemuxForgedMarkerIsOutput proves that a marker a program prints in
// the middle of its output (it can learn the token) followed by more output
// ends nothing: the run ends at the runner's last marker, whose section
// alone counts, and the forged section is not output the cap counts.
func TestDemuxForgedMarkerIsOutput(t *testing.T) {
	p := testProtocol()
	forged := fmt.Sprintf("%s%03d %010d %010d %010d 0\n", p.prefix, 0, 0, 0, 4)
	sec := record('c', "real", 1, "r")
	end := fmt.Sprintf("%s%03d %010d %010d %010d 0\n", p.prefix, 3, 0, 0, len(sec))
	in := frames(frame(1, string(p.ack)+"a"+forged+"junkb"), frame(1, end+sec), frame(2, end))
	wholeAndByteByByte(t, "forged", in, func(t *testing.T, r io.Reader) {
		o := newOutput(100, p)
		if err := demux(r, o, func() {}); err != nil {
			t.Fatalf("demux: %v", err)
		}
		rep, ok := o.ended()
		if !ok || rep.Status != 3 || string(o.files.buf) != sec {
			t.Fatalf("ended %v %+v, section %q; want status 3 and the runner's section", ok, rep, o.files.buf)
		}
		o.finish()
		if want := "a" + forged + "b"; string(o.stdout.buf) != want {
			t.Errorf("stdout %q, want %q", o.stdout.buf, want)
		}
	})
	// A marker announcing more than the caps allow is no marker: output.
	huge := fmt.Sprintf("%s%03d %010d %010d %010d 0\n", p.prefix, 0, 0, 0, p.filesBound()+1)
	o := newOutput(1000, p)
	_ = demux(bytes.NewReader(frames(frame(1, string(p.ack)+huge+"x"))), o, func() {})
	if o.files.want != -1 || string(o.stdout.buf) != huge+"x" {
		t.Errorf("section want %d, stdout %q: want no section and the marker as output", o.files.want, o.stdout.buf)
	}
}
