package supervisor

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

// bashSessionPath is where the images keep the rcfile of Bash's session
// stub (images/bash-session.sh).
const bashSessionPath = "/opt/sandbox/stubs/bash-session.sh"

// bashPath is the shell: Debian's, in every image.
const bashPath = "/bin/bash"

// bashOneShot is the script of Bash's one-shot stub, a spare started with
// its container: it reads its stdin's path on 3, then the code to its end
// (read -N reads in blocks, where read -d "" reads a byte a system call:
// 0.35 s for a megabyte), closes 3 and 4, which the program has no use
// for, takes the stdin as 0, and evaluates the code as a script named
// main.sh would run ($0, "main.sh: line 2: …" in errors, exit, set -e,
// background jobs).
const bashOneShot = `IFS= read -r -u 3 __sb_in; IFS= read -r -N 2147483647 -u 3 __sb; ` +
	`exec 3<&- 4>&- <"$__sb_in"; unset __sb_in; eval "$__sb"`

// bashReinterrupt is how often a session call's interrupt is sent again
// until the shell comes back from it: a shell running a loop of commands
// loses about a third of the SIGINTs (11 of 30, measured: those that reach
// a child between its fork and its exec), and the host waits a second for
// the call's end before it kills the container.
const bashReinterrupt = 50 * time.Millisecond

// bashStub is Bash's entry in Stubs, for the session rcfile at rcfile. Not
// warm but a spare: a one-shot's shell is started with the container,
// beside the warm Node stub, so that its start (exec, loading, some 2.3 ms
// of CPU) is not the program's wait. A session is an interactive shell that takes its
// requests on 0 in its own syntax (bashRequest), whose rcfile says ready.
func bashStub(rcfile string) Stub {
	return Stub{
		Name: "bash",
		Argv: func(_ Limits, session bool) []string {
			if session {
				return []string{bashPath, "--noprofile", "--noediting", "--rcfile", rcfile, "+m", "-i"}
			}
			return []string{bashPath, "--norc", "--noprofile", "-c", bashOneShot, "main.sh"}
		},
		Spare:       true,
		Request:     bashRequest,
		Reinterrupt: bashReinterrupt,
	}
}

// bashRequest is a session call's line for the session shell: the code's
// characters as bash's read counts them (it drops NUL bytes, uncounted, so
// a count of bytes would wait for bytes that never come; a NUL the read
// leaves behind is dropped by the next one), the stdin's path, quoted, and
// the call's number, which the shell's done names.
// The code runs by eval at the shell's top level, so that its declarations
// are globals, with its stdin as 0 and the request and reply descriptors
// out of its reach.
func bashRequest(code []byte, stdin string, call int) []byte {
	n := len(code) - bytes.Count(code, []byte{0})
	quoted := "'" + strings.ReplaceAll(stdin, "'", `'\''`) + "'"
	return fmt.Appendf(nil, "\\__sb_read %d %s %d && \\builtin eval \"$__sb_code\" <\"$__sb_in\" 3<&- 4>&-\n",
		n, quoted, call)
}
