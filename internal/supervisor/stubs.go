package supervisor

import "time"

// Limits is what a stub's command line may depend on.
type Limits struct {
	// Data is the data limit the program gets, in bytes
	// (SANDBOX_DATA_LIMIT); 0 when there is none.
	Data int64
}

// Stub is how the supervisor starts one language.
type Stub struct {
	// Name is the stub's process: languages whose entries share a name
	// (typescript runs on javascript's) share one warm stub.
	Name string
	// Argv is the stub's command line for a run (session false) or a
	// session, given the limits. A warm stub is started once with the
	// run's command line and serves a session too.
	Argv func(l Limits, session bool) []string
	// Env is the stub's environment beyond HOME, LANG and PATH.
	Env []string
	// Stack is the stub's stack limit (RLIMIT_STACK), in bytes; 0 keeps
	// the supervisor's.
	Stack uint64
	// Warm reports that the stub is started before its program, says
	// "ready" and takes its one-shot as a "call o". A stub that is not
	// warm is started for its one-shot, gets the code on descriptor 3
	// (closed after it) and the stdin as its descriptor 0, and its end is
	// its exit.
	Warm bool
	// Spare reports that a stub that is not warm is started when the
	// container starts, beside the warm stub of another process, and waits
	// for its one-shot: the stdin's path ("/dev/null" for none) on a line
	// on descriptor 3, then the code to the end of 3. Its first
	// instructions (an interpreter's start) then happen before the program
	// comes; it is killed, not waited for, when the program is another's
	// or a session comes.
	Spare bool
	// Request is the line a session call is sent as on the stub's
	// descriptor 0, in the stub's own syntax, given the code (which
	// follows on 3), the stdin's path ("-" for none) and the call's number
	// in the session (from 1), which the stub's done may name. Nil: the
	// stub protocol's "call s <n> <stdin>" on 3, and 0 is /dev/null.
	Request func(code []byte, stdin string, call int) []byte
	// Reinterrupt, when set, sends a session call's interrupt again every
	// Reinterrupt until the stub says done, for a stub that can lose one
	// (a shell: a child it has forked and not yet executed swallows the
	// SIGINT, and the shell, its child ended well, takes it as handled).
	Reinterrupt time.Duration
}

// Stubs is the stub of each language, by canonical name. Each language's
// entry is added with its stub (Python, JavaScript, Bash).
var Stubs = map[string]Stub{
	"javascript": nodeStub(nodeStubPath),
	"typescript": nodeStub(nodeStubPath),
	"bash":       bashStub(bashSessionPath),
}
