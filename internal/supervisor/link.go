package supervisor

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// IOEnv names the variable that holds the path of the host's socket for
// this container; without it the link is the attach connection's streams.
const IOEnv = "SANDBOX_IO"

// Link is the byte path to the host: the program and the session's calls
// come in on In; the acks, output, markers and sections go out on Out and
// Err (the host frames them, as it does a runner's streams).
type Link struct {
	In       *os.File
	Out, Err *os.File
}

// Connect returns the link: with a socket path (SANDBOX_IO), two
// connections to it, the first In and Out, the second Err, as the host's
// socket expects them (runtime/socket.go); without, the standard streams.
func Connect(path string) (Link, error) {
	if path == "" {
		return Link{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, nil
	}
	var files [2]*os.File
	for i := range files {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			err = unix.Connect(fd, &unix.SockaddrUnix{Name: path})
			if err != nil {
				unix.Close(fd)
			}
		}
		if err != nil {
			if i > 0 {
				files[0].Close()
			}
			return Link{}, fmt.Errorf("supervisor: connect %s: %w", path, err)
		}
		files[i] = os.NewFile(uintptr(fd), path)
	}
	return Link{In: files[0], Out: files[0], Err: files[1]}, nil
}

// pending reports whether the link has bytes to read now: a program sent
// before the stub was ready, whose ack is then "gl".
func pending(f *os.File) bool {
	raw, err := f.SyscallConn()
	if err != nil {
		return false
	}
	ready := false
	raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		ready = err == nil && n > 0 && fds[0].Revents&unix.POLLIN != 0
	})
	return ready
}
