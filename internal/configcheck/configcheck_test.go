package configcheck

import (
	"errors"
	"testing"
)

// TestProblems: each failed check is one message naming its key under the
// prefix, the field in parentheses where given; passing checks add none.
func TestProblems(t *testing.T) {
	p := Problems{Prefix: "environments.node."}
	p.Check(true, "memory", "never said")
	p.Check(false, "pids", "%d is outside %d..%d", 2, 8, 32768)
	p.CheckField(false, "tmpfs", "TmpfsBytes", "%d is over %s", 9, p.Key("memory"))
	var joined interface{ Unwrap() []error }
	if !errors.As(p.Err(), &joined) || len(joined.Unwrap()) != 2 {
		t.Fatalf("Err() = %v, want two problems", p.Err())
	}
	want := []string{"environments.node.pids: 2 is outside 8..32768",
		"environments.node.tmpfs: 9 is over environments.node.memory (TmpfsBytes)"}
	for i, err := range joined.Unwrap() {
		if err.Error() != want[i] {
			t.Errorf("problem %d = %q, want %q", i, err, want[i])
		}
	}
	named := Problems{Name: func(k string) string { return map[string]string{"tmpfs": "environments.data."}[k] + k }}
	named.Check(false, "max_files_bytes", "is over %s", named.Key("tmpfs"))
	if got := named.Err().Error(); got != "max_files_bytes: is over environments.data.tmpfs" {
		t.Errorf("named problem = %q", got)
	}
	var bad Problems
	bad.Bad("keep", "%s is short", "1s")
	if bad.Err() == nil || bad.Err().Error() != "keep: 1s is short" {
		t.Errorf("Bad recorded %v", bad.Err())
	}
	if (&Problems{}).Err() != nil {
		t.Error("no problems, yet an error")
	}
	if !InRange(5, 5, 6) || InRange(int64(7), 5, 6) {
		t.Error("InRange is not inclusive of its bounds, or not exclusive beyond them")
	}
}
