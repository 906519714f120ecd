package runtime

import (
	"io"
	"time"

	"github.com/docker/docker/api/types"
)

// link is the byte path between the service and one container's runner:
// the program goes in (Write, then CloseWrite for its end), the runner's
// stdout and stderr come out as frames of Docker's stdcopy format (Read),
// and a read can be bounded in time and resumed (SetReadDeadline, as on a
// net.Conn). Two links exist: the attach connection through dockerd and the
// container's shim (attachLink), and the runner's own sockets, which skip
// both (socketLink, socket.go).
type link interface {
	io.Reader
	io.Writer
	CloseWrite() error
	SetReadDeadline(t time.Time) error
	Close() error
}

// attachLink is a container's attach connection.
type attachLink struct {
	hj types.HijackedResponse
}

var _ link = attachLink{}

// Read reads the attach stream's frames.
func (a attachLink) Read(p []byte) (int, error) { return a.hj.Reader.Read(p) }

// Write writes to the container's stdin.
func (a attachLink) Write(p []byte) (int, error) { return a.hj.Conn.Write(p) }

// CloseWrite closes the container's stdin (StdinOnce).
func (a attachLink) CloseWrite() error { return a.hj.CloseWrite() }

// SetReadDeadline bounds the reads.
func (a attachLink) SetReadDeadline(t time.Time) error { return a.hj.Conn.SetReadDeadline(t) }

// Close ends the connection both ways.
func (a attachLink) Close() error {
	a.hj.Close()
	return nil
}
