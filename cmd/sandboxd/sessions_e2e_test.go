package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"sandboxd/httpapi/wire"
	"sandboxd/internal/testenv"
)

// TestSessionOverTheBinary: through the real binary and Docker,
// a session is opened, three calls build on each other (a variable, an
// import, a file in /tmp) with their result values, its state is read,
// it is ended (204), and its id then answers 404. The logs never hold
// the id in full.
func TestSessionOverTheBinary(t *testing.T) {
	testenv.RequireIntegration(t)
	s := startService(t, uniqueInstance(t), noData)
	status, body := s.sessionRequest(t, "POST", "/v1/sessions", `{}`)
	if status != http.StatusCreated {
		t.Fatalf("open: %d %s\n%s", status, body, s.Log())
	}
	var open wire.SessionResponse
	if err := json.Unmarshal(body, &open); err != nil || open.Environment != "python" || open.IdleTimeoutS != 300 {
		t.Fatalf("open answered %s (%v)", body, err)
	}
	id := open.SessionID
	calls := []struct{ code, stdout, result string }{
		{"x = 41", "", "null"},
		{"import json\nx += 1\nopen('/tmp/state.txt', 'w').write(json.dumps({'x': x}))\nx", "", `"42"`},
		{"print(json.loads(open('/tmp/state.txt').read())['x'] * 2)\n[x, json.__name__]", "84\n", `"[42, 'json']"`},
	}
	for i, c := range calls {
		req, _ := json.Marshal(map[string]string{"code": c.code})
		status, body := s.sessionRequest(t, "POST", "/v1/sessions/"+id+"/code", string(req))
		var a struct {
			wire.SessionCodeResponse
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(body, &a); err != nil || status != 200 {
			t.Fatalf("call %d: %d %s (%v)", i+1, status, body, err)
		}
		if a.Status != "ok" || a.Stdout != c.stdout || string(a.Result) != c.result || a.Session.Calls != i+1 ||
			a.Session.SessionID != id || a.SessionEnded {
			t.Fatalf("call %d answered %s; want stdout %q and result %s", i+1, body, c.stdout, c.result)
		}
	}
	status, body = s.sessionRequest(t, "GET", "/v1/sessions/"+id, "")
	var state wire.SessionState
	if err := json.Unmarshal(body, &state); err != nil || status != 200 || state.Calls != 3 || state.Busy || state.LastCallAt == nil {
		t.Fatalf("state: %d %s (%v)", status, body, err)
	}
	if status, body := s.sessionRequest(t, "DELETE", "/v1/sessions/"+id, ""); status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", status, body)
	}
	for _, r := range [][3]string{{"GET", "", ""}, {"POST", "/code", `{"code":"x"}`}} {
		if status, body := s.sessionRequest(t, r[0], "/v1/sessions/"+id+r[1], r[2]); status != 404 || !bytes.Contains(body, []byte("closed")) {
			t.Fatalf("%s after the end: %d %s", r[0], status, body)
		}
	}
	if strings.Contains(s.Log(), id) || strings.Contains(s.Log(), id[8:]) {
		t.Fatalf("the log holds the session id in full:\n%s", s.Log())
	}
}

// sessionRequest sends one request to the service and returns its status
// and body.
func (s *service) sessionRequest(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(fmt.Errorf("%s %s: %w", method, path, err))
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}
