package runnerproto

import (
	"strings"
	"testing"
)

// tailOf is the tail of the marker r.Append writes: what follows Magic,
// the token and the colon.
func tailOf(t *testing.T, r EndReport, session bool) string {
	t.Helper()
	m := string(r.Append(nil, testToken, session))
	prefix := Magic + testToken + ":"
	if !strings.HasPrefix(m, prefix) {
		t.Fatalf("marker %q does not start with %q", m, prefix)
	}
	return m[len(prefix):]
}

func TestEndReportRoundTrip(t *testing.T) {
	run := EndReport{Status: 3, CPUMS: 1234, MaxRSSKB: 51300, FilesLen: 777, FilesCut: true}
	if got, want := tailOf(t, run, false), "003 0000001234 0000051300 0000000777 1\n"; got != want {
		t.Fatalf("a run's tail %q, want %q", got, want)
	}
	if got, ok := ParseEndReport([]byte(tailOf(t, run, false)), false); !ok || got != run {
		t.Errorf("ParseEndReport = %+v, %v; want %+v", got, ok, run)
	}
	call := EndReport{Status: 130, CPUMS: 12, MaxRSSKB: 4096, FilesLen: 7, FilesCut: true, Value: 2, ValueLen: 100,
		Interrupted: true}
	if got, want := tailOf(t, call, true), "130 0000000012 0000004096 0000000007 1 2 0000000100 1\n"; got != want {
		t.Fatalf("a call's tail %q, want %q", got, want)
	}
	if got, ok := ParseEndReport([]byte(tailOf(t, call, true)), true); !ok || got != call {
		t.Errorf("ParseEndReport = %+v, %v; want %+v", got, ok, call)
	}
	// Out of range, the fields are clamped: the marker keeps its width.
	wild := EndReport{Status: 1000, CPUMS: -5, MaxRSSKB: 1 << 40, Value: 7, ValueLen: -1}
	if got, want := tailOf(t, wild, true), "255 0000000000 9999999999 0000000000 0 2 0000000000 0\n"; got != want {
		t.Errorf("clamped tail %q, want %q", got, want)
	}
}

func TestParseEndReportRefuses(t *testing.T) {
	for _, c := range []struct {
		tail    string
		session bool
	}{
		{"003 0000001234 0000000005\n", false},              // fields missing
		{"003 0000001234 00000513x0 0000000000 0\n", false}, // not a digit
		{"003-0000001234 0000051300 0000000000 0\n", false}, // wrong separator
		{"300 0000001234 0000051300 0000000000 0\n", false}, // status over 255
		{"003 0000001234 0000051300 0000000000 2\n", false}, // <t> not 0 or 1
		{"003 0000001234 0000051300 0000000000 0", false},   // no newline
		{"003 0000001234 0000051300 0000000000 0\nx", false},
		{"000 0000000000 0000000000 0000000000 0 0 0000000000 0\n", false}, // a session's, in a run
		{"000 0000000000 0000000000 0000000000 0 3 0000000000 0\n", true},  // no such value flag
		{"000 0000000000 0000000000 0000000000 0 0 0000000001 0\n", true},  // a length without a value
		{"000 0000000000 0000000000 0000000000 0 0 0000000000 2\n", true},  // no such interrupt flag
		{"000 0000000000 0000000000 0000000000 0\n", true},                 // a run's, in a session
	} {
		if got, ok := ParseEndReport([]byte(c.tail), c.session); ok {
			t.Errorf("ParseEndReport(%q, %v) = %+v, want no marker", c.tail, c.session, got)
		}
	}
}

func TestFitsShape(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"", true}, {"0", true}, {"003 00", true}, {"003 0000001234 0000051300 0000000777 1\n", true},
		{"003 0000001234 0000051300 0000000777 1\nx", false}, {"x", false}, {"00 ", false}, {"003-", false},
	} {
		if got := FitsShape([]byte(c.in), MarkerTail); got != c.want {
			t.Errorf("FitsShape(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// FuzzParseEndReport feeds arbitrary tails. It must never panic; what it
// takes holds its ranges, and Append writes it back byte for byte.
func FuzzParseEndReport(f *testing.F) {
	for _, seed := range []string{
		"003 0000001234 0000051300 0000000777 1\n", "130 0000000012 0000004096 0000000007 1 2 0000000100 1\n",
		"999 9999999999 9999999999 9999999999 9\n", "", "\n", "000 0000000000 0000000000 0000000000 0 0 0000000001 0\n",
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, tail []byte, session bool) {
		r, ok := ParseEndReport(tail, session)
		if !ok {
			return
		}
		if r.Status < 0 || r.Status > 255 || r.Value < 0 || r.Value > 2 || (r.Value == 0 && r.ValueLen != 0) {
			t.Fatalf("took %q as %+v, out of range", tail, r)
		}
		if !session && (r.Value != 0 || r.ValueLen != 0 || r.Interrupted) {
			t.Fatalf("a run's tail %q gave a session's fields: %+v", tail, r)
		}
		if got := tailOf(t, r, session); got != string(tail) {
			t.Fatalf("took %q as %+v, written back as %q", tail, r, got)
		}
	})
}
