// Package runnerproto is the one source of the runner protocol, shared by
// the host (runtime, and httpapi for the file-name rule) and the image's
// supervisor: the headers, the acks and end markers, the records of files
// in and out, the file-name rule and the bounds. Fuzzed here, for both ends.
//
// # Host protocol 7
//
// How the service and the image's runner talk over a container's link: its
// attach connection, or the runner's own sockets. A warm container's runner
// reads its first line: a Header runs one program, a SessionHeader starts a
// session.
//
//	stdin, to the runner:     "<token> <n> <m> <f> <k> <maxfiles> <maxbytes> <language>\n" (Header),
//	                          then the n bytes of the program, the m bytes of
//	                          its standard input and the k bytes of its f
//	                          files in, as records; <maxfiles> and <maxbytes>
//	                          are the caps on the files out; <language> is
//	                          the program's canonical name (python, …): for
//	                          typescript the n bytes are its JavaScript,
//	                          transpiled on the host with an inline source map
//	stdout, from the runner:  the ack, "\x00sandboxd:<token>:go\n" (Magic,
//	                          the token, a colon, AckGo), once the program is
//	                          read and before it runs; its late form, ending
//	                          ":gl\n" (AckLate), when the program came before
//	                          the runner was ready for it (its interpreter
//	                          still starting or importing the image's
//	                          preloaded modules, in a container started for
//	                          its run): the time limit then counts from the
//	                          ack instead of the hand-over
//	stdout and stderr, both:  the end marker,
//	                          "\x00sandboxd:<token>:<sss> <cpu> <rss> <len> <t>\n"
//	                          (MarkerTail's shape, EndReport), once the
//	                          program has ended and its output is flushed;
//	                          <sss> is its exit status in 3 digits, <cpu> the
//	                          CPU milliseconds (user + system, children
//	                          included) it used, <rss> its peak resident
//	                          memory in KiB and <len> the length of the files
//	                          section, each in 10 digits, and <t> 1 when a
//	                          file out was left out or listed without
//	                          content, else 0
//	stdout, after the marker: the files section: <len> bytes of records,
//	                          the files out in name order
//	a record:                 "<kind> <namelen> <size>\n<name>[<content>]",
//	                          decimal numbers; kind "c" (KindContent) is
//	                          followed by the <size> bytes of the file, kind
//	                          "l" (KindListed) lists a file of <size> bytes
//	                          without its content; names by ValidName
//
// The token is random and new for every run, so no output matches it by
// chance. The service reads a files section only after an end marker that
// announces at most the bound its caps allow, and parses it with a bound on
// every step (ParseRecords), so no forgery makes it hold more than the caps.
// The end marker lets a run answer as soon as the program has ended,
// instead of when the container has exited; a run without it (a signal, the
// OOM killer, a kill at the deadline) is judged by the container's exit, and
// has no files out. The ack tells a program that ran from a container that
// died before it got its program, which is retried.
//
// # Sessions
//
//	stdin, to the runner:     "S <token> <maxvalue> <language>\n" (SessionHeader)
//
// switches the runner into its loop in the language. It answers with the
// loop's ack, "\x00sandboxd:<token>:go\n" on stdout, once the image's
// preloaded modules are imported (so no call's time limit counts them).
// Then, for every call:
//
//	stdin, to the runner:     a Header with a fresh token, the code, its
//	                          stdin and its files in, as above
//	stdout and stderr, both:  the call's ack, "\x00sandboxd:<token>:go\n",
//	                          once the call is read and its files in are
//	                          written, before it runs; then the call's
//	                          output; then its end marker,
//	                          "\x00sandboxd:<token>:<sss> <cpu> <rss> <len> <t> <v> <vlen> <i>\n"
//	                          (SessionMarkerTail's shape): the one-shot
//	                          fields (<rss> the call's own peak where the
//	                          kernel lets the runner reset it, else the
//	                          session's so far) followed by <v>, 0 when the
//	                          call has no value, 1 when <vlen> bytes of it
//	                          follow the files section, 2 when they are the
//	                          value cut at <maxvalue> bytes; <vlen> in 10
//	                          digits; <i> 1 when the runner's interrupt
//	                          ended the call (status 130), else 0
//	stdout, after the marker: the files section (<len> bytes), then the
//	                          value (<vlen> bytes, UTF-8)
//
// What a stream carries before its call's ack, or after its end marker
// (and, on stdout, the section and value), was written between calls: the
// service counts it and drops it. The runner ignores SIGINT between calls;
// during a call SIGINT interrupts it. The session ends when the service
// closes stdin (the runner exits 0), or at a header that does not parse
// (exit 2): a program that read the protocol stream itself ends its own
// session.
//
// A runner that cannot run the language a header names answers the
// program's own error: the ack, a line on stderr that names both
// languages, exit status 1 in the end marker.
//
// An image says which protocol its runner speaks in LabelRunner (Version),
// and which languages it runs in LabelLanguages; the host refuses an image
// labelled with another protocol.
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
//	                            a stub that takes its calls in its own syntax (Bash) adds " <call>", the number
//	                            its request gave (from 1): a copy of a done, or an earlier call's, is dropped
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
