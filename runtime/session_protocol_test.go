package runtime

import (
	"bytes"
	"strings"
	"testing"
)

// The session's wire pieces, without Docker: the ack's search, the call's
// marker, and where a call's part of each stream ends.

func TestAckSeekAcrossFrames(t *testing.T) {
	ack := []byte("\x00sandboxd:0123:go\n")
	stream := append(append([]byte("noise\x00sandbox"), ack...), "output"...)
	for cut := 0; cut <= len(stream); cut++ {
		for cut2 := cut; cut2 <= len(stream); cut2++ {
			a := ackSeek{ack: ack}
			dropped, rest, found := 0, []byte(nil), false
			for _, part := range [][]byte{stream[:cut], stream[cut:cut2], stream[cut2:]} {
				if found {
					rest = append(rest, part...)
					continue
				}
				d, r, f := a.scan(part)
				dropped, found = dropped+d, f
				rest = append(rest, r...)
			}
			if !found || dropped != len("noise\x00sandbox") || string(rest) != "output" {
				t.Fatalf("cuts %d,%d: found %v dropped %d rest %q", cut, cut2, found, dropped, rest)
			}
		}
	}
	// Without the ack, everything is dropped but what may start it.
	a := ackSeek{ack: ack}
	if d, _, f := a.scan([]byte("abc\x00sand")); f || d != 3 || string(a.held) != "\x00sand" {
		t.Errorf("dropped %d found %v held %q", d, f, a.held)
	}
}

func TestSessionMarker(t *testing.T) {
	p := newCallProtocol(4, 1000, 100)
	m := func(tail string) []byte { return append(append([]byte("out"), p.prefix...), tail...) }
	rep, ok := p.endReport(m("130 0000000012 0000004096 0000000007 1 2 0000000100 1\n"))
	if !ok || rep.Status != 130 || rep.CPUMS != 12 || rep.FilesLen != 7 || !rep.FilesCut || rep.Value != 2 ||
		rep.ValueLen != 100 || !rep.Interrupted || sectionLen(rep) != 107 {
		t.Errorf("report %+v ok %v", rep, ok)
	}
	// The shapes are runnerproto's (its tests); here, the call's cap.
	if _, ok := p.endReport(m("000 0000000000 0000000000 0000000000 0 1 0000000101 0\n")); ok {
		t.Error("a value over the cap was taken for a marker")
	}
	// A one-shot run's protocol knows no session marker.
	if _, ok := newProtocol(4, 1000).endReport(m("000 0000000000 0000000000 0000000000 0 0 0000000000 0\n")); ok {
		t.Error("a one-shot run took a session marker")
	}
	if got := string(sessionHeader(p.token, 65536, "python")); got != "S "+p.token+" 65536 python\n" {
		t.Errorf("header %q", got)
	}
}

func TestCallTakeSplitsStreams(t *testing.T) {
	p := newCallProtocol(4, 1000, 100)
	c := newCall(p, 1<<10, false)
	marker := string(p.prefix) + "000 0000000001 0000000002 0000000000 0 1 0000000002 0\n"
	var drained int
	drop := func(n int) { drained += n }
	// Stdout: noise, the ack, output, the marker, the value, noise; each
	// cut at every byte, so frames end anywhere.
	stdout := "before" + string(p.ack) + "hello\n" + marker + "42" + "after"
	for i := range len(stdout) {
		rest := []byte{stdout[i]}
		for len(rest) > 0 {
			if c.stage[0] == stageOver {
				drop(len(rest))
				break
			}
			rest = c.take(0, rest, drop)
		}
	}
	stderr := "pre" + string(p.ack) + "warn\n" + marker + "post"
	rest := []byte(stderr)
	for len(rest) > 0 && c.stage[1] != stageOver {
		rest = c.take(1, rest, drop)
	}
	drop(len(rest))
	select {
	case <-c.done:
	default:
		t.Fatal("the call is not done")
	}
	rep, ok := c.out.ended()
	if !ok || rep.Value != 1 || string(c.out.files.buf) != "42" {
		t.Fatalf("ended %v report %+v section %q", ok, rep, c.out.files.buf)
	}
	c.out.finish()
	if string(c.out.stdout.buf) != "hello\n" || string(c.out.stderr.buf) != "warn\n" {
		t.Errorf("stdout %q stderr %q", c.out.stdout.buf, c.out.stderr.buf)
	}
	if want := len("before") + len("after") + len("pre") + len("post"); drained != want {
		t.Errorf("drained %d bytes, want %d", drained, want)
	}
}

func TestCallTakeForgedMarkerEndsStreamEarly(t *testing.T) {
	p := newCallProtocol(4, 1000, 100)
	c := newCall(p, 1<<10, false)
	forged := string(p.prefix) + "000 0000000000 0000000000 0000000000 0 0 0000000000 0\n"
	// The program's own marker ends its call's stdout: what follows is no
	// longer the call's.
	rest := []byte(string(p.ack) + "mine" + forged + "later")
	for len(rest) > 0 && c.stage[0] != stageOver {
		rest = c.take(0, rest, func(int) {})
	}
	if c.stage[0] != stageOver || !bytes.Equal(rest, []byte("later")) || !strings.HasPrefix(string(c.out.stdout.buf), "mine") {
		t.Errorf("stage %d rest %q stdout %q", c.stage[0], rest, c.out.stdout.buf)
	}
}
