package supervisor

import (
	"errors"
	"testing"
)

func TestParseStatCPU(t *testing.T) {
	// The command name may hold spaces and parentheses.
	line := "42 (a) b (c) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 1 0 100 1000 10"
	got, err := parseStatCPU([]byte(line))
	if err != nil || got != (7+3+2+1)*procTick {
		t.Errorf("got %d, %v", got, err)
	}
	if _, err := parseStatCPU([]byte("42 (x) Z 1 42 42 0 -1 0 0 0 0 0 7 3 2 1 20 0")); !errors.Is(err, errGone) {
		t.Errorf("a zombie: %v", err)
	}
	for _, bad := range []string{"", "42 (x", "42 (x) S 1 2", "42 (x) S 1 42 42 0 -1 0 0 0 0 0 7 -3 2 1 20 0"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestStatusKB(t *testing.T) {
	status := []byte("Name:\tnode\nVmHWM:\t  58000 kB\nVmData:\t564000 kB\nRssAnon:\t15000 kB\nVmHWMx: 1 kB\n")
	if got := statusKB(status, "VmHWM:"); got != 58000 {
		t.Errorf("VmHWM %d", got)
	}
	if got := statusKB(status, "VmSwap:"); got != 0 {
		t.Errorf("missing %d", got)
	}
	if got := statusKB([]byte("VmHWM: lots kB\n"), "VmHWM:"); got != 0 {
		t.Errorf("malformed %d", got)
	}
}

func TestDataCap(t *testing.T) {
	// Python's stub as measured: VmData 4.9 MiB, RssAnon 3.5 MiB, D 96 MiB.
	vmData, anon, data := int64(5017), int64(3584), int64(96<<20)
	if got := dataCap(vmData, anon, data); got != uint64(vmData*1024+data-anon*1024) {
		t.Errorf("cap %d", got)
	}
	if got := dataCap(0, 1<<30, 1); got != 0 {
		t.Errorf("a stub past its limit: %d", got)
	}
}
