// Package runnerproto is the one source of the runner protocol, shared by
// the host (runtime, and httpapi for the file-name rule) and the image's
// supervisor: the headers, the acks and end markers, the records of files
// in and out, the file-name rule and the bounds. Fuzzed here, for both ends.
//
// # Host protocol 7
//
// Protocol 6 byte for byte (runtime/protocol.go and
// runtime/session_protocol.go hold its full description until it moves
// here), but for one field: the headers end with the language.
//
//	program header:  "<token> <n> <m> <f> <k> <maxfiles> <maxbytes> <language>\n"
//	session header:  "S <token> <maxvalue> <language>\n"
//
// <language> is the canonical name (sandboxd.LanguagePython, …); for
// typescript the <n> bytes of the program are its JavaScript, transpiled on
// the host with an inline source map. The acks ("go", "gl"), the end
// markers, the records and the bounds are protocol 6's. An image says which
// protocol its runner speaks in LabelRunner, and which languages it runs in
// LabelLanguages; the host refuses an image labelled otherwise.
//
// # The stub protocol
//
// Inside the container the supervisor (PID 1) owns the link, the token,
// files, usage, limits and output caps; each language is a stub it starts
// as a child, in a process group of its own, with descriptors 0 (/dev/null
// until a call gives it stdin), 1 and 2 (pipes to the supervisor), 3
// (requests) and 4 (replies), and without the token or any SANDBOX_*
// variable. The stubs it may start are listed in EnvLanguages, the first
// kept warm.
//
//	stub → supervisor (fd 4):  "ready\n"                         once warm: imports done, evaluator warmed
//	supervisor → stub (fd 3):  "call <mode> <n> <stdin>\n" + n bytes of code
//	                            <mode> o (one-shot) or s (session call); <stdin> "-" or a path under /dev/shm/
//	                            holding the call's stdin, which the stub gives the program as its descriptor 0
//	                            (the supervisor unlinks it when the call ends)
//	stub → supervisor (fd 4):  "done <status> <v> <vlen>\n" + vlen bytes      (a one-shot's <v> is always 0)
//	                            <status> 0..255; <v> 0 no value, 1 a value (UTF-8, at most the session's maxvalue
//	                            bytes, cut by the stub), <vlen> decimal
//	signals:                   SIGINT to the stub's process group: the session call's interrupt
//
// A session call ends at "done". A one-shot program ends at "done" too,
// which the stub sends once the program is over and before the interpreter
// tears itself down (Python: an atexit handler registered after the
// preload; Node: process.emit wrapped, so "done" follows the program's own
// exit listeners), or else when the stub exits (wait4: os._exit, a signal,
// V8's fatal errors, a program that replaced the hook, Bash's one-shot).
// Node's teardown takes 4.5-13 ms after its exit event, which would double
// a hello world's answer if the answer waited for wait4.
//
// The stub writes "done" only after its own writes to 1 and 2 have
// returned, so when the supervisor, on "done", reads both pipes until they
// are empty, it has everything the call wrote before it ended. A stub does
// not handle the token, markers, files, usage, limits or output caps.
// Bash's session shell speaks the same protocol in its own syntax: the
// request line reaches it on its standard input as
// "__sb_read <n> <stdin> && eval …", the code on 3, and "ready" and "done"
// come back on 4. A stub started for its call (Bash's one-shot) gets the
// code on 3 and the stdin as its descriptor 0 directly.
package runnerproto
