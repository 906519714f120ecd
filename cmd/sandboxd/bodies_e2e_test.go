package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"sandboxd/internal/testenv"
)

// rawConn opens a connection to the service and writes s on it; it is
// closed when the test ends.
func rawConn(t *testing.T, s *service, req string) net.Conn {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	return conn
}

// readAnswer reads the service's answer on conn within d.
func readAnswer(t *testing.T, conn net.Conn, d time.Duration) (int, string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", d, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// helloWorld is the hello world of the attack tests, on a connection of
// its own, with its status and how long it took from the request.
func helloWorld(t *testing.T, s *service, body string) (int, string, time.Duration) {
	t.Helper()
	start := time.Now()
	conn := rawConn(t, s, fmt.Sprintf("POST /v1/code HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body))
	status, answer := readAnswer(t, conn, 20*time.Second)
	return status, answer, time.Since(start)
}

// TestIdleBodiesDoNotShutOutCallers is the idle-bodies attack on the real
// service at its defaults: 16 connections declare 12 MiB bodies
// (Content-Length and chunked) and send none, 4 send chunked bodies a
// byte a second, all from this address; a hello world from the same
// address is still answered within a second, measured from its request
// once the attackers are all in. The slow bodies are then cut off with a
// 408 that says what to do. Before, four idle sockets had every call
// refused 429 after 2 s.
func TestIdleBodiesDoNotShutOutCallers(t *testing.T) {
	testenv.RequireIntegration(t)
	started := time.Now()
	s := startService(t, uniqueInstance(t), noData)
	t.Logf("the service started in %v", time.Since(started))
	hello := `{"code":"print('hello world')"}`
	if status, body, _ := helloWorld(t, s, hello); status != http.StatusOK {
		t.Fatalf("warm-up: %d %s", status, body)
	}
	// The second is the body path's promise: the hello world must find a
	// warm container, as it does on a service that has been up a while.
	waitFor(t, 2*time.Minute, "a warm pool", func() bool { return poolIdle(s) >= 2 })
	for i := range 16 {
		framing := "Content-Length: 12582912"
		if i%2 == 1 {
			framing = "Transfer-Encoding: chunked"
		}
		rawConn(t, s, "POST /v1/code HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+framing+"\r\n\r\n")
	}
	var slow []net.Conn
	stop := make(chan struct{})
	defer close(stop)
	for range 4 {
		conn := rawConn(t, s, "POST /v1/code HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n")
		slow = append(slow, conn)
		go func() {
			for tick := time.Tick(time.Second); ; {
				select {
				case <-stop:
					return
				case <-tick:
					if _, err := io.WriteString(conn, "1\r\n \r\n"); err != nil {
						return
					}
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // the attackers' headers are read
	status, body, took := helloWorld(t, s, hello)
	if status != http.StatusOK || !strings.Contains(body, `"stdout":"hello world\n"`) || took > time.Second {
		t.Fatalf("hello world beside 16 idle and 4 slow bodies: %d after %v: %s", status, took, body)
	}
	t.Logf("hello world beside 16 idle and 4 slow bodies: answered in %v", took)
	// body_grace (5 s) and 1 KiB/s: a byte a second is cut off.
	cut := time.Now()
	status, body = readAnswer(t, slow[0], 30*time.Second)
	t.Logf("a body sent a byte a second: answered %d %v after the hello world", status, time.Since(cut))
	if status != http.StatusRequestTimeout || !strings.Contains(body, `"error":"the request body arrived too slowly`) {
		t.Errorf("a body sent a byte a second: %d %s", status, body)
	}
}

// TestSlowBodiesGiveTheirRoomBack fills the body budget (4 bodies of
// 256 KiB here) with bodies that send almost all their bytes at once and
// then stall: a fifth large body finds no room (429), and once the stalled
// ones fall behind server.min_body_rate they are answered 408 and the same
// large body goes through. Before, they kept their room until the 30 s
// read timeout.
func TestSlowBodiesGiveTheirRoomBack(t *testing.T) {
	testenv.RequireIntegration(t)
	const size = 256 << 10
	s := startService(t, uniqueInstance(t), noData, "SANDBOX_SERVER_MAX_BODY_BYTES=256KiB",
		"SANDBOX_RUNTIME_MAX_FILES_BYTES=64KiB", "SANDBOX_SERVER_MIN_BODY_RATE=64KiB", "SANDBOX_SERVER_BODY_GRACE=2s")
	large := `{"code":"print('hello world')"` + strings.Repeat(" ", size-40) + `}`
	var stalled []net.Conn
	for range 4 {
		stalled = append(stalled, rawConn(t, s, fmt.Sprintf("POST /v1/code HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s",
			len(large), large[:len(large)-100])))
	}
	time.Sleep(500 * time.Millisecond) // their bytes are read
	if status, body, _ := helloWorld(t, s, large); status != http.StatusTooManyRequests || !strings.Contains(body, "too many large requests") {
		t.Fatalf("a fifth large body beside 4 that fill the budget: %d %.300s", status, body)
	}
	for _, conn := range stalled {
		if status, body := readAnswer(t, conn, 30*time.Second); status != http.StatusRequestTimeout {
			t.Fatalf("a stalled body: %d %s", status, body)
		}
	}
	if status, body, _ := helloWorld(t, s, large); status != http.StatusOK {
		t.Fatalf("a large body once the stalled ones were cut off: %d %.300s", status, body)
	}
}

// poolIdle is the service's sandboxd_pool_idle_containers, or -1.
func poolIdle(s *service) int {
	resp, err := http.Get(s.MetricsURL() + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "sandboxd_pool_idle_containers "); ok {
			var n float64
			if _, err := fmt.Sscan(v, &n); err == nil {
				return int(n)
			}
		}
	}
	return -1
}
