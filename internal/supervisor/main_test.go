package supervisor

import (
	"fmt"
	"os"
	"testing"
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
