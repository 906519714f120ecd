package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/internal/slots"
)

// newRealServer serves the API over a real listener with the production
// server settings and short timeouts, over fakes of the runner and gate.
func newRealServer(t *testing.T, runner *fakeRunner, timeouts Timeouts) *httptest.Server {
	t.Helper()
	api := newTestServer(runner, &fakeGate{})
	api.MaxCodeBytes = 1000
	api.Admitter = slots.New(2, 0)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = NewHTTPServer(api.Handler(), timeouts, api.Log)
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// rawRequest writes req on a fresh connection and returns the status line's
// code and the body, or 0 when the server closed without answering.
func rawRequest(t *testing.T, addr, req string, within time.Duration) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(within))
	// The server may answer (413) and close before it read the whole
	// request, as HTTP allows: the write goes on beside the read, and a
	// write cut short by that answer is no failure.
	wrote := make(chan error, 1)
	go func() {
		_, err := io.WriteString(conn, req)
		wrote <- err
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		if werr := <-wrote; werr != nil {
			t.Fatalf("writing the request: %v; reading the answer: %v", werr, err)
		}
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestBadHTTPInputs(t *testing.T) {
	runner := &fakeRunner{result: sandboxd.Result{Stdout: "1\n", Status: sandboxd.StatusOK}}
	ts := newRealServer(t, runner, Timeouts{ReadHeader: time.Second, Read: time.Second, Write: 5 * time.Second, Idle: time.Second})
	addr := ts.Listener.Addr().String()
	post := func(contentType, body string) string {
		return fmt.Sprintf("POST /v1/code HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			contentType, len(body), body)
	}
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	cases := []struct {
		name   string
		req    string
		status int
		inBody string
	}{
		{"GET on code", "GET /v1/code HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405, "not allowed"},
		{"DELETE on code", "DELETE /v1/code HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405, "not allowed"},
		{"POST on health", post("application/json", "{}")[0:4] + " /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", 405, "not allowed"},
		{"unknown path", "GET /admin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 404, "no such endpoint"},
		{"text/plain JSON is read as JSON", post("text/plain", `{"code":"print(1)"}`), 200, `"stdout":"1\n"`},
		{"form type JSON is read as JSON", post("application/x-www-form-urlencoded", `{"code":"print(1)"}`), 200, `"stdout":"1\n"`},
		{"multipart body", post("multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"code\"\r\n\r\nprint(1)\r\n--b--"), 400, "JSON object"},
		{"xml", post("application/xml", "<code>print(1)</code>"), 400, "JSON object"},
		{"null", post("application/json", "null"), 400, "JSON object"},
		{"null code", post("application/json", `{"code":null}`), 400, "missing or empty"},
		{"number for code", post("application/json", `{"code":12}`), 400, "must be a string"},
		{"array for code", post("application/json", `{"code":["print(1)"]}`), 400, "must be a string"},
		{"object for language", post("application/json", `{"language":{},"code":"x"}`), 400, "must be a string"},
		{"duplicate keys", post("application/json", `{"code":"print(1)","code":"print(2)"}`), 400, "more than once"},
		{"duplicate keys, other case", post("application/json", `{"code":"print(1)","Code":"print(2)"}`), 400, "more than once"},
		{"duplicate keys, folded long s", post("application/json", `{"code":"print(1)","stdin":"a","ſtdin":"b"}`), 400, "more than once"},
		{"deep JSON", post("application/json", `{"code":`+deep+`}`), 413, "over the limit"},
		{"deep JSON within the size", post("application/json", `{"code":`+strings.Repeat("[", 400)+strings.Repeat("]", 400)+`}`), 400, "nesting is too deep"},
		{"JSON at the depth limit", post("application/json", `{"code":`+strings.Repeat("[", 31)+strings.Repeat("]", 31)+`}`), 400, "must be a string"},
		{"truncated JSON", post("application/json", `{"code":"print(`), 400, "ends too early"},
		{"invalid UTF-8 in JSON", post("application/json", "{\"code\":\"print('\xff')\"}"), 200, ""},
		{"enormous body", post("application/json", `{"code":"`+strings.Repeat("x", 1<<20)+`"}`), 413, "over the limit"},
		{"code over the limit", post("application/json", `{"code":"`+strings.Repeat("x", 1001)+`"}`), 413, "limit of 1000"},
		{"truncated body (short Content-Length data)", "POST /v1/code HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{\"code\":", 408, "not read within the read timeout"},
		{"chunked body", "POST /v1/code HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n13\r\n{\"code\":\"print(1)\"}\r\n0\r\n\r\n", 200, `"exit_code":0`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			status, body := rawRequest(t, addr, tc.req, 5*time.Second)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %.200s", status, tc.status, body)
			}
			if !json.Valid([]byte(body)) {
				t.Fatalf("answer is not JSON: %.200q", body)
			}
			if !strings.Contains(body, tc.inBody) {
				t.Fatalf("answer %.200q lacks %q", body, tc.inBody)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Fatalf("answered after %v, beyond the read timeout", took)
			}
		})
	}
}

// TestSlowBodyHoldsNoSandbox: a client trickling its body (slowloris) is cut
// off at the read timeout, and meanwhile takes no sandbox slot: another
// request still runs at once.
func TestSlowBodyHoldsNoSandbox(t *testing.T) {
	runner := &fakeRunner{result: sandboxd.Result{Stdout: "1\n", Status: sandboxd.StatusOK}}
	ts := newRealServer(t, runner, Timeouts{ReadHeader: 500 * time.Millisecond, Read: 500 * time.Millisecond, Write: 5 * time.Second, Idle: time.Second})
	addr := ts.Listener.Addr().String()
	var slow []net.Conn
	for i := 0; i < 4; i++ { // more slow clients than sandbox slots
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, _ = io.WriteString(conn, "POST /v1/code HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"co")
		slow = append(slow, conn)
	}
	if status, body := rawRequest(t, addr, "POST /v1/code HTTP/1.1\r\nHost: x\r\nContent-Length: 19\r\nConnection: close\r\n\r\n{\"code\":\"print(1)\"}", 2*time.Second); status != 200 {
		t.Fatalf("a normal request beside slow ones: %d %s", status, body)
	}
	start := time.Now()
	for _, conn := range slow {
		_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
		_, _ = io.WriteString(conn, "d") // trickle
		status := 0
		if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
		if status != 0 && status != http.StatusRequestTimeout {
			t.Fatalf("slow body answered %d, want 408 or a closed connection", status)
		}
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("slow bodies held on for %v past the 500ms read timeout", took)
	}
	// A slow header (slowloris proper) is cut off too.
	if status, _ := rawRequestSlowHeader(t, addr); status != 0 && status != 408 && status != 400 {
		t.Fatalf("slow header answered %d", status)
	}
}

func rawRequestSlowHeader(t *testing.T, addr string) (int, error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	_, _ = io.WriteString(conn, "POST /v1/code HTTP/1.1\r\nHost: x\r\n")
	start := time.Now()
	buf := make([]byte, 1)
	_, err = conn.Read(buf) // the server must close the connection
	if time.Since(start) > 2*time.Second {
		t.Fatalf("slow header kept open for %v", time.Since(start))
	}
	return 0, err
}
