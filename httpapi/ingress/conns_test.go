package ingress

import (
	"log/slog"
	"net"
	"net/netip"
	"testing"
)

// TestCountedConnsHalfCloseAndProxiesPass: a counted connection still
// half-closes, as net/http does before it closes after an answer such as
// a 431 (else the client waits 500 ms); a trusted proxy is not capped.
// httpapi's TestConnectionsPerClientAreCapped checks the cap itself and
// its 429 over real TCP.
func TestCountedConnsHalfCloseAndProxiesPass(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	ln := mustListen(t)
	defer ln.Close()
	if _, ok := LimitConns(ln, 2, nil, log, nil).(*connLimiter); !ok {
		t.Fatal("LimitConns with a cap returned no limiter")
	}
	first, other := net.Pipe()
	defer first.Close()
	defer other.Close()
	var counted net.Conn = &countedConn{Conn: first, done: func() {}}
	if _, ok := counted.(interface{ CloseWrite() error }); !ok {
		t.Error("a counted connection hides CloseWrite")
	}
	trustedLn := LimitConns(mustListen(t), 1, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, log, nil)
	defer trustedLn.Close()
	for range 3 {
		go func() { _, _ = net.Dial("tcp", trustedLn.Addr().String()) }()
		c, err := trustedLn.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
}

// mustListen listens on a loopback port.
func mustListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
