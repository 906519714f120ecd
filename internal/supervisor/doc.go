// Package supervisor is PID 1 of every sandbox image: it owns the link to
// the host (runnerproto's host protocol), the run's token, the files in and
// out, the program's stdin, its usage, the data limit and the session loop,
// and starts each language as a stub (runnerproto's stub protocol) that
// knows none of these.
//
// A one-shot run: the warm stub is started and waits for its program (and
// beside it a spare of another process, Bash's shell, which is killed when
// the program is not its language's); the
// header, code, stdin and files in are read from the link; the files are
// written under the root, the stdin into a file under the shm directory; the
// run is acked and handed to the stub; its output is pumped to the link as
// it comes; at "done", or when the stub exits, the pipes are read dry, the
// usage measured and the files out collected, and the end marker written.
// A session loops on calls the same way, with one stub kept between them.
//
// The supervisor reaps every process (orphans are reparented to it), so
// the usage of a call includes the orphans it left and that ended during
// it. A stub killed by SIGKILL gets no marker: the supervisor exits 137 and
// the host judges the container's exit, as it would the runner's.
package supervisor
