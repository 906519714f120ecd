package runtime

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"sandboxd/internal/runnerproto"
)

// FuzzParseFiles feeds arbitrary files sections (a program can forge one on
// its stdout) under arbitrary caps. It must never panic, and whatever it
// accepts keeps the caps: at most maxFiles files with content and maxBytes
// bytes of it, maxFiles+runnerproto.ListExtra files in all, names valid and strictly in
// order, every content inside the section.
func FuzzParseFiles(f *testing.F) {
	for _, seed := range [][]byte{
		nil,
		section(record('c', "a.txt", 2, "hi"), record('l', "b.bin", 1<<40, "")),
		section(record('c', "d/e/f.png", 8, "\x89PNG\r\n\x1a\n")),
		[]byte("c 1 99999999999999999999\na"),
		[]byte("c 3 1\n../x"),
		bytes.Repeat([]byte("l 1 0\na"), 3),
	} {
		f.Add(seed, uint8(2), uint16(100))
	}
	f.Fuzz(func(t *testing.T, in []byte, maxFiles uint8, maxBytes uint16) {
		files, listed, err := parseFiles(in, int(maxFiles), int64(maxBytes))
		if err != nil {
			if files != nil || listed {
				t.Fatalf("an error with files %v listed %v", files, listed)
			}
			return
		}
		kept, total, sawListed := 0, int64(0), false
		for i, fl := range files {
			if why := runnerproto.ValidName(fl.Name); why != "" {
				t.Fatalf("accepted the name %q, which %s", fl.Name, why)
			}
			if i > 0 && fl.Name <= files[i-1].Name {
				t.Fatalf("names out of order: %q after %q", fl.Name, files[i-1].Name)
			}
			if fl.Content == nil {
				sawListed = true
				continue
			}
			if int64(len(fl.Content)) != fl.Size || !bytes.Contains(in, fl.Content) {
				t.Fatalf("%q: content of %d bytes for size %d, or not from the section", fl.Name, len(fl.Content), fl.Size)
			}
			kept++
			total += fl.Size
		}
		if kept > int(maxFiles) || total > int64(maxBytes) || len(files) > int(maxFiles)+runnerproto.ListExtra || listed != sawListed {
			t.Fatalf("%d files with %d bytes of content, %d in all, listed %v: over the caps %d/%d", kept, total, len(files), listed, maxFiles, maxBytes)
		}
	})
}

// FuzzDemuxFiles feeds a run's stdout and stderr made of arbitrary output,
// markers (of any announced length, forged or not) and arbitrary bytes
// after them, read in arbitrary pieces. It must never panic; the files
// section never holds more than the protocol's bound nor more than the
// marker before it announced; when the run ended, the section is whole.
func FuzzDemuxFiles(f *testing.F) {
	p := testProtocol()
	for _, seed := range []struct {
		out, after, errs string
		n                uint32
	}{
		{"hello\n", "c 1 2\nab", "", 8},
		{"", "", "", 0},
		{"x", "c 1 2\nabmore output", "w", 8},
		{"", "junk", "", 1 << 30},
	} {
		f.Add([]byte(seed.out), []byte(seed.after), []byte(seed.errs), seed.n, uint8(0), uint8(3))
	}
	f.Fuzz(func(t *testing.T, out, after, errs []byte, n uint32, step, status uint8) {
		end := fmt.Sprintf("%s%03d %010d %010d %010d 0\n", p.prefix, status, 1, 2, n)
		in := frames(frame(1, string(p.ack)+string(out)+end+string(after)), frame(2, string(errs)+end))
		o := newOutput(64, p)
		var r io.Reader = bytes.NewReader(in)
		if step > 0 {
			r = &pieceReader{r: r, n: int(step)}
		}
		_ = demux(r, o, func() {})
		if int64(len(o.files.buf)) > p.filesBound() || (o.files.want >= 0 && len(o.files.buf) > o.files.want) {
			t.Fatalf("section of %d bytes, announced %d, bound %d", len(o.files.buf), o.files.want, p.filesBound())
		}
		if rep, ok := o.ended(); ok && int64(len(o.files.buf)) != rep.FilesLen {
			t.Fatalf("ended with %d bytes of a section of %d", len(o.files.buf), rep.FilesLen)
		}
	})
}
