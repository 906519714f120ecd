package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/httpapi/ingress"
	"sandboxd/internal/slots"
)

// helloRequest is a hello world POST /v1/code on a connection of its own.
const helloRequest = "POST /v1/code HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 19\r\n" +
	"Connection: close\r\n\r\n{\"code\":\"print(1)\"}"

// newBodyServer serves api over real TCP with the service's own timeouts
// for a short handler, its read deadline told to api.
func newBodyServer(t *testing.T, api *Server) *httptest.Server {
	t.Helper()
	timeouts := DefaultTimeouts(5 * time.Second)
	api.ReadTimeout = timeouts.Read
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = NewHTTPServer(api.Handler(), timeouts, api.Log)
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// attackServer is the service's body defences at their defaults, over
// real TCP, with a runner that answers at once.
func attackServer(t *testing.T) (*Server, string) {
	t.Helper()
	api := newTestServer(&fakeRunner{result: sandboxd.Result{Stdout: "1\n", Status: sandboxd.StatusOK}}, &fakeGate{})
	api.MaxBodyBytes, api.MaxCodeBytes, api.Admitter = 12<<20, 1000, slots.New(4, time.Second)
	api.MinBodyRate, api.BodyGrace, api.MaxBodiesPerClient = 1024, 10*time.Second, 32
	return api, newBodyServer(t, api).Listener.Addr().String()
}

// dialSend opens a connection to addr and writes s on it, closed at the
// test's end.
func dialSend(t *testing.T, addr, s string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, s); err != nil {
		t.Fatal(err)
	}
	return conn
}

// waitReading waits until the server reads n bodies from 127.0.0.1.
func waitReading(t *testing.T, api *Server, n int) {
	t.Helper()
	key := netip.MustParsePrefix("127.0.0.1/32")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		got := api.bodies.Reading(key)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server reads %d bodies, want %d", got, n)
		}
	}
}

// TestIdleBodiesHoldNoBudget is the idle-bodies attack: 16 connections
// that declare 12 MiB bodies (by Content-Length and chunked) and send none,
// 4 that send a chunked body a byte a second, and 2 that trickle their
// headers, all from one address. Together they hold at most a small
// chunk each of the body budget, and a hello world from the same address
// is answered within a second. When the budget was reserved from the
// headers, the hello world was refused 429 after 2 s.
func TestIdleBodiesHoldNoBudget(t *testing.T) {
	api, addr := attackServer(t)
	for i := range 16 {
		framing := "Content-Length: 12582912"
		if i%2 == 1 {
			framing = "Transfer-Encoding: chunked"
		}
		dialSend(t, addr, "POST /v1/code HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+framing+"\r\n\r\n")
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	for range 4 {
		conn := dialSend(t, addr, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
		go trickle(conn, stop, "1\r\n \r\n", time.Second)
	}
	for range 2 {
		go trickle(dialSend(t, addr, "P"), stop, "O", 50*time.Millisecond)
	}
	waitReading(t, api, 20)
	if held := api.bodies.InUse(); held > 20*ingress.FirstChunk {
		t.Errorf("20 bodies that sent almost nothing hold %d bytes of the budget", held)
	}
	start := time.Now()
	status, body := rawRequest(t, addr, helloRequest, 10*time.Second)
	if took := time.Since(start); status != http.StatusOK || took > time.Second {
		t.Fatalf("hello world beside the idle bodies: %d after %v: %s", status, took, body)
	}
}

// trickle writes s on conn every period until stop.
func trickle(conn net.Conn, stop <-chan struct{}, s string, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if _, err := io.WriteString(conn, s); err != nil {
				return
			}
		}
	}
}

// TestSlowBodyIsCutOff: at a minimum rate of 1000 bytes a second after a
// grace of 1 s, a body trickled 10 bytes a second, and one that sends
// 2000 bytes at once and then stops, are answered 408 with an error that
// says what to do, and their room in the budget is given back; a body
// sent at 4 times the rate gets through. Without the rate the first two
// held their room until the 30 s read timeout.
func TestSlowBodyIsCutOff(t *testing.T) {
	api, addr := attackServer(t)
	api.MinBodyRate, api.BodyGrace = 1000, time.Second
	json := `{"code":"print(1)"` + strings.Repeat(" ", 2980) + `}`
	cases := []struct {
		name   string
		first  int           // bytes sent at once
		step   int           // then bytes each period
		period time.Duration // between steps
		want   int
	}{
		{"a byte every 100ms", 0, 1, 100 * time.Millisecond, http.StatusRequestTimeout},
		{"fast then stopped", 2000, 0, time.Hour, http.StatusRequestTimeout},
		{"4 times the rate", 0, 80, 20 * time.Millisecond, http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn := dialSend(t, addr, fmt.Sprintf("POST /v1/code HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(json), json[:c.first]))
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				tick := time.NewTicker(c.period)
				defer tick.Stop()
				for sent := c.first; sent < len(json); sent += c.step {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					if _, err := io.WriteString(conn, json[sent:min(sent+c.step, len(json))]); err != nil {
						return
					}
				}
			}()
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.want, body)
			}
			if c.want == http.StatusRequestTimeout && !strings.Contains(string(body), `"error":"the request body arrived too slowly: `+
				`after the first 1s it must average at least 1000 bytes a second`) {
				t.Errorf("408 without the JSON error that says what to do: %s", body)
			}
			waitReading(t, api, 0)
			if held := api.bodies.InUse(); held != 0 {
				t.Errorf("the answered body still holds %d bytes of the budget", held)
			}
		})
	}
}

// TestPipelinedRequestsOnOneConnection: two requests written at once on
// one kept-alive connection are both read and answered, the second's body
// under its own clock (the first's read deadline is not left behind).
func TestPipelinedRequestsOnOneConnection(t *testing.T) {
	api, addr := attackServer(t)
	api.BodyGrace = 300 * time.Millisecond
	one := "POST /v1/code HTTP/1.1\r\nHost: x\r\nContent-Length: 19\r\n\r\n{\"code\":\"print(1)\"}"
	conn := dialSend(t, addr, one+one)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	for i := range 2 {
		if i == 1 {
			time.Sleep(time.Second) // past the first body's grace: a deadline left behind would cut the connection
			_, _ = io.WriteString(conn, one)
		}
		for range 1 + i {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("answer %d: %v", i, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("answer %d: %d %s", i, resp.StatusCode, body)
			}
		}
	}
	if held := api.bodies.InUse(); held != 0 {
		t.Errorf("answered bodies still hold %d bytes of the budget", held)
	}
}

// TestBodiesPerClientAreCapped: a client sending MaxBodiesPerClient bodies
// is refused a third at once with a 429 that says why, whatever
// X-Forwarded-For it writes, unless its peer is a trusted proxy: then the
// client is the address the proxy forwarded for.
func TestBodiesPerClientAreCapped(t *testing.T) {
	api, addr := attackServer(t)
	api.MaxBodiesPerClient = 2
	idle := "POST /v1/code HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.%d\r\nContent-Length: 100\r\n\r\n"
	dialSend(t, addr, fmt.Sprintf(idle, 1))
	dialSend(t, addr, fmt.Sprintf(idle, 2))
	waitReading(t, api, 2)
	hello := func(xff string) (int, string) {
		return rawRequest(t, addr, strings.Replace(helloRequest, "Host: x\r\n", "Host: x\r\nX-Forwarded-For: "+xff+"\r\n", 1), 5*time.Second)
	}
	start := time.Now()
	status, body := hello("198.51.100.7")
	if status != http.StatusTooManyRequests || time.Since(start) > time.Second ||
		!strings.Contains(body, "your address is already sending 2 request bodies at once") {
		t.Fatalf("a third body from one address: %d after %v: %s", status, time.Since(start), body)
	}
	api.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	if status, body := hello("198.51.100.7"); status != http.StatusOK {
		t.Errorf("another client behind a trusted proxy: %d %s", status, body)
	}
}

// TestConnectionsPerClientAreCapped: over LimitConns' cap, a connection is
// answered 429 at once and closed; once one of the client's connections
// closes, it may open another. A trusted proxy is not capped.
func TestConnectionsPerClientAreCapped(t *testing.T) {
	api, _ := attackServer(t)
	ts := httptest.NewUnstartedServer(NewHTTPServer(api.Handler(), DefaultTimeouts(time.Second), api.Log).Handler)
	ts.Listener = LimitConns(ts.Listener, 2, nil, api.Log)
	ts.Start()
	t.Cleanup(ts.Close)
	addr := ts.Listener.Addr().String()
	first := dialSend(t, addr, "")
	dialSend(t, addr, "")
	conn := dialSend(t, addr, "")
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" ||
		!strings.Contains(string(body), `{"error":"your address already has 2 connections open`) {
		t.Fatalf("a third connection: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	first.Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		status, body := rawRequest(t, addr, helloRequest, 5*time.Second)
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a connection after one closed: %d %s", status, body)
		}
	}
}
