package units

import (
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	cases := map[string]int64{"0": 0, "65536": 65536, "512KiB": 512 << 10, "128MiB": 128 << 20, "1GiB": 1 << 30,
		"1MB": 1000000, "16m": 16 << 20, "2g": 2 << 30, "10B": 10}
	for in, want := range cases {
		got, err := parseBytes(in)
		if err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "1.5MiB", "MiB", "1TiB", "99999999999999999999"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("parseBytes(%q) accepted", bad)
		}
	}
}

// TestUnmarshalText: sizes and CPU counts read from their text, and a bad
// value is refused quoting at most 64 bytes of it.
func TestUnmarshalText(t *testing.T) {
	var b Bytes
	if err := b.UnmarshalText([]byte(" 16m ")); err != nil || b != 16<<20 {
		t.Errorf("Bytes 16m = %d, %v", b, err)
	}
	for in, want := range map[string]NanoCPUs{"0.5": 5e8, "1": 1e9, "-1": -1, "NaN": -1, "1e12": 1<<63 - 1} {
		var n NanoCPUs
		if err := n.UnmarshalText([]byte(in)); err != nil || n != want {
			t.Errorf("NanoCPUs %q = %d, %v; want %d", in, n, err, want)
		}
	}
	var n NanoCPUs
	if err := n.UnmarshalText([]byte("many")); err == nil || err.Error() != "many is not a number such as 1.0" {
		t.Errorf("NanoCPUs many: %v", err)
	}
	err := b.UnmarshalText([]byte(strings.Repeat("9", 100) + "x"))
	if err == nil || !strings.HasSuffix(err.Error(), "... (101 bytes) is not a size such as 65536, 512KiB, 128MiB or 1GiB") {
		t.Errorf("a long bad size: %v", err)
	}
}
