package supervisor

import (
	"io"
	"net"
	"path/filepath"
	"testing"
)

func TestConnectMakesTwoConnections(t *testing.T) {
	path := filepath.Join(t.TempDir(), "io.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan net.Conn, 2)
	go func() {
		for range 2 {
			c, err := l.Accept()
			if err != nil {
				return
			}
			got <- c
		}
	}()
	link, err := Connect(path)
	if err != nil {
		t.Fatal(err)
	}
	defer link.In.Close()
	defer link.Err.Close()
	first, second := <-got, <-got
	defer first.Close()
	defer second.Close()
	// The first carries the program in and stdout out, the second stderr.
	first.Write([]byte("in"))
	buf := make([]byte, 2)
	if _, err := io.ReadFull(link.In, buf); err != nil || string(buf) != "in" {
		t.Errorf("in %q, %v", buf, err)
	}
	link.Out.Write([]byte("out"))
	link.Err.Write([]byte("err"))
	for _, c := range []struct {
		conn net.Conn
		want string
	}{{first, "out"}, {second, "err"}} {
		b := make([]byte, len(c.want))
		if _, err := io.ReadFull(c.conn, b); err != nil || string(b) != c.want {
			t.Errorf("got %q, %v, want %q", b, err, c.want)
		}
	}
	if _, err := Connect(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("connected to no socket")
	}
}
