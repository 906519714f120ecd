package supervisor

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"sandboxd/internal/runnerproto"
)

// TestMain lets the test binary be what the supervisor starts: itself as
// "exec" (Exec), and the fake stubs of fakestub_test.go.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case ExecCommand:
			err := Exec(os.Args[2:])
			fmt.Fprintln(os.Stderr, err)
			os.Exit(126)
		case "fakestub":
			os.Exit(fakeStub(os.Args[2:]))
		case "fakechild":
			os.Exit(fakeChild(os.Args[2:]))
		}
	}
	os.Exit(m.Run())
}

// needProto skips a test that needs runnerproto's bodies while they are
// still the stubs of its frozen API.
func needProto(tb testing.TB) {
	tb.Helper()
	defer func() {
		if r := recover(); r != nil {
			if !strings.Contains(fmt.Sprint(r), "not implemented") {
				panic(r)
			}
			tb.Skipf("needs runnerproto's bodies: %v", r)
		}
	}()
	runnerproto.ValidName("a")
	runnerproto.SessionHeader{}.Append(nil)
	runnerproto.EndReport{}.Append(nil, strings.Repeat("0", 32), false)
}
