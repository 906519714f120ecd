package servicetest

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// ProxyRequest is a request a DropProxy received: its number (1 for the
// first), method, path, headers and body.
type ProxyRequest struct {
	N      int
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Dropped is an answer a DropProxy read whole from the service and never
// sent: the request it answered, and its status, headers and body. A
// request hung up on (DropProxy.SetHangUp) has HungUp set and no answer.
type Dropped struct {
	Request ProxyRequest
	Status  int
	Header  http.Header
	Body    []byte
	HungUp  bool
}

// DropProxy is an HTTP proxy in front of a service that loses answers on the
// way (docs/design/retries.md §9.1, AfterAnswer): a request its rule picks is
// forwarded, the service's whole answer is read, and the client's connection
// is then closed without a byte of it. Other requests pass through, streamed.
// With SetHangUp it hangs up instead (HangUp): the service sees its caller
// leave mid-run.
type DropProxy struct {
	// URL is the proxy's base URL, in place of the service's.
	URL string

	target string
	drop   func(ProxyRequest) bool
	client *http.Client
	srv    *http.Server
	ln     net.Listener

	mu      sync.Mutex
	n       int
	hangUp  time.Duration
	dropped []Dropped
}

// DropNth is a rule that drops the answer of the nth request (1 for the first).
func DropNth(n int) func(ProxyRequest) bool {
	return func(r ProxyRequest) bool { return r.N == n }
}

// DropFirst is a rule that drops the answer of the first request match picks,
// and of no other.
func DropFirst(match func(ProxyRequest) bool) func(ProxyRequest) bool {
	var once sync.Once
	return func(r ProxyRequest) bool {
		hit := false
		if match(r) {
			once.Do(func() { hit = true })
		}
		return hit
	}
}

// StartDropProxy serves a DropProxy to target (a base URL) on a free loopback
// port, dropping the answers of the requests drop picks (called once per
// request, in the order they arrive). It is closed when the test ends.
func StartDropProxy(t testing.TB, target string, drop func(ProxyRequest) bool) *DropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &DropProxy{
		URL:    "http://" + ln.Addr().String(),
		target: strings.TrimRight(target, "/"),
		drop:   drop,
		// A fresh upstream connection per request: nothing carries over
		// between a dropped answer and the next request.
		client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		ln:     ln,
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	t.Cleanup(p.Close)
	return p
}

// Close stops the proxy and closes every connection it holds.
func (p *DropProxy) Close() { _ = p.srv.Close() }

// Drops lists the answers dropped so far, in order.
func (p *DropProxy) Drops() []Dropped {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Dropped(nil), p.dropped...)
}

// SetHangUp has the requests picked from now on hung up on d after they
// were forwarded, both sides closed without waiting for the answer (0: read
// the whole answer first, the default).
func (p *DropProxy) SetHangUp(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hangUp = d
}

// Requests is how many requests the proxy received.
func (p *DropProxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// ServeHTTP forwards one request and drops or passes its answer.
func (p *DropProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.n++
	in := ProxyRequest{N: p.n, Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body}
	drop := p.drop != nil && p.drop(in)
	hangUp := p.hangUp
	p.mu.Unlock()

	if drop && hangUp > 0 {
		p.hangUpOn(w, in, hangUp)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+in.Path, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	req.Host = r.Host
	res, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	if drop {
		p.dropAnswer(w, in, res)
		return
	}
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	copyFlushing(w, res.Body)
}

// hangUpOn forwards in and, d later, closes the service's connection and the
// client's without an answer.
func (p *DropProxy) hangUpOn(w http.ResponseWriter, in ProxyRequest, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, in.Method, p.target+in.Path, bytes.NewReader(in.Body))
	if err == nil {
		req.Header = in.Header.Clone()
		if res, err := p.client.Do(req); err == nil {
			// Answered within d: the answer is lost all the same.
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
	p.mu.Lock()
	p.dropped = append(p.dropped, Dropped{Request: in, HungUp: true})
	p.mu.Unlock()
	closeClient(w)
}

// dropAnswer reads res whole, records it and closes the client's connection
// without writing anything.
func (p *DropProxy) dropAnswer(w http.ResponseWriter, in ProxyRequest, res *http.Response) {
	answer, _ := io.ReadAll(res.Body)
	p.mu.Lock()
	p.dropped = append(p.dropped, Dropped{Request: in, Status: res.StatusCode, Header: res.Header.Clone(), Body: answer})
	p.mu.Unlock()
	closeClient(w)
}

// closeClient closes the client's connection without writing anything.
func closeClient(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (never for HTTP/1.1): abort the handler, which
		// closes the connection as well.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// copyFlushing copies src to w, flushing after each read so a stream (an MCP
// server's events) reaches the client as it comes.
func copyFlushing(w http.ResponseWriter, src io.Reader) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}
