package ingress

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"sandboxd"
)

// connRefusalWrite bounds writing the refusal to a connection over its
// client's cap.
const connRefusalWrite = time.Second

// Refusal is the whole HTTP/1.1 response that refuses a connection with
// err, a CodeBusy sandboxd.Error; the caller's error mapping writes it.
type Refusal func(err error) []byte

// LimitConns returns ln, accepting at most perClient connections at once
// from one client address (an IPv6 client by its /64); perClient <= 0
// returns ln itself. A connection over the cap is answered at once with
// refusal's response, then closed, without reading its request. Peers in
// trusted (reverse proxies) are not capped: they carry many clients'
// connections, and those clients' bodies are capped by
// Limits.MaxBodiesPerClient from X-Forwarded-For instead.
func LimitConns(ln net.Listener, perClient int, trusted []netip.Prefix, log *slog.Logger, refusal Refusal) net.Listener {
	if perClient <= 0 {
		return ln
	}
	return &connLimiter{Listener: ln, most: perClient, trusted: trusted, log: log, refusal: refusal}
}

// connLimiter is the listener of LimitConns.
type connLimiter struct {
	net.Listener
	most    int
	trusted []netip.Prefix
	log     *slog.Logger
	refusal Refusal
	open    Counter
}

// Accept returns the next connection within its client's cap, refusing
// the others on the side.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		a, ok := peerAddr(c.RemoteAddr().String())
		if !ok || Trusted(l.trusted, a) {
			return c, nil
		}
		key := Key(a)
		if l.open.Take(key, l.most) {
			return &countedConn{Conn: c, done: func() { l.open.Give(key) }}, nil
		}
		l.log.Debug("connection refused: too many from one client", "client", key.String(), "most", l.most)
		go l.refuse(c)
	}
}

// refuse answers c with its refusal and closes it.
func (l *connLimiter) refuse(c net.Conn) {
	err := &sandboxd.Error{Code: sandboxd.CodeBusy, Op: "httpapi.accept", RetryAfter: bodyRetry,
		Message: fmt.Sprintf("your address already has %d connections open to this service, "+
			"the most one client may; close some or reuse them (keep-alive), then retry", l.most)}
	_ = c.SetWriteDeadline(time.Now().Add(connRefusalWrite))
	_, _ = c.Write(l.refusal(err))
	_ = c.Close()
}

// countedConn is a connection counted against its client's cap until it
// is closed.
type countedConn struct {
	net.Conn
	once sync.Once
	done func()
}

// CloseWrite half-closes a TCP connection: net/http does so before it
// closes one it answered without reading all of it (a 431, a 413), so
// the client sees the answer end at once rather than after its 500 ms
// wait for the rest.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close closes the connection and stops counting it.
func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.done)
	return err
}
