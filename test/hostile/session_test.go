package hostile

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/httpapi/wire"
	"sandboxd/internal/servicetest"
	"sandboxd/internal/testenv"
)

// Sessions under attack : each case is a sequence of
// calls in one session, through the real service over HTTP, as a user
// meets it, in both environments under runc and runsc. Every answer must
// be a right one or a clean end of the session: never a 5xx, never output
// of another call or of the time between calls, never a survivor on the
// host, never a container or a goroutine left.

// The time limits the session services run with: short, so the cases
// that must be interrupted or killed stay fast.
const (
	sessionPythonTimeout = 2 * time.Second
	sessionDataTimeout   = 4 * time.Second
)

// sessionEnv is the service's environment for the session cases under oci:
// every environment, small warm pools, the short limits (node's python's).
func sessionEnv(oci string, extra ...string) []string {
	return append([]string{"SANDBOX_RUNTIME_OCI_RUNTIME=" + oci,
		"SANDBOX_RUNTIME_POOL_SIZE=1", "SANDBOX_ENVIRONMENTS_DATA_POOL_SIZE=1",
		"SANDBOX_RUNTIME_TIMEOUT=" + sessionPythonTimeout.String(),
		"SANDBOX_ENVIRONMENTS_DATA_TIMEOUT=" + sessionDataTimeout.String(),
		"SANDBOX_ENVIRONMENTS_NODE_IMAGE=" + testenv.NodeImage(), "SANDBOX_ENVIRONMENTS_NODE_POOL_SIZE=1",
		"SANDBOX_ENVIRONMENTS_NODE_TIMEOUT=" + sessionPythonTimeout.String(),
		// Every case calls from loopback, one client: the free per-client
		// cap would count them all as one.
		"SANDBOX_SESSIONS_MAX=8", "SANDBOX_SESSIONS_MAX_PER_CLIENT=0"}, extra...)
}

// mustSessionService starts the service for oci, stopped (and checked for
// leftovers) when the test ends.
func mustSessionService(t *testing.T, name string, env []string) *servicetest.Service {
	t.Helper()
	testenv.RequireIntegration(t)
	return servicetest.Start(t, servicetest.Options{
		Instance: fmt.Sprintf("hostile-sess-%d-%s", os.Getpid(), name), Env: env})
}

// TestHostileSessions runs every session case in every environment (in
// node, its languages' own cases) under runc and runsc (one service per
// OCI runtime), at most parallelRuns at once, then the long session (1,000
// calls in python under runc, 200 in data and under runsc) alone, checking the service's goroutines and descriptors
// before and after. Capacity and ids are TestHostileSessionLimits'.
func TestHostileSessions(t *testing.T) {
	for _, oci := range ociRuntimes {
		t.Run(oci, func(t *testing.T) {
			svc := mustSessionService(t, oci, sessionEnv(oci))
			c := &sessionClient{t: t, base: svc.URL}
			for _, env := range []environment{pythonEnv, dataEnv} {
				c.open(t, env.name).close(t) // the pool warm, the first start paid
			}
			base := scrape(t, svc)
			sem := make(chan struct{}, parallelRuns)
			var wg sync.WaitGroup
			for _, env := range []environment{pythonEnv, dataEnv, nodeEnv} {
				for _, sc := range sessionCases(env) {
					wg.Add(1)
					go func() {
						defer wg.Done()
						sem <- struct{}{}
						defer func() { <-sem }()
						t.Run(env.name+"/"+sc.path(), func(t *testing.T) { runSessionCase(t, c, env, oci, sc) })
					}()
				}
			}
			wg.Wait()
			assertServiceFlat(t, svc, base, "after the cases")
			for _, env := range []environment{pythonEnv, dataEnv} {
				n := 200
				if oci == "runc" && env.name == sandboxd.DefaultEnvironment {
					n = 1000
				}
				t.Run(env.name+"/long", func(t *testing.T) { runLongSession(t, svc, c, env, n) })
			}
		})
	}
}

// runSessionCase opens a session in env, runs the case's steps, each
// answer checked, closes it (or finds it ended), and checks that nothing
// it started survives on the host.
func runSessionCase(t *testing.T, c *sessionClient, env environment, oci string, sc sessionCase) {
	marker := fmt.Sprintf("hostile-sess-%d-%s-%s-%s", os.Getpid(), oci, env.name, strings.ReplaceAll(sc.path(), "/", "-"))
	s := c.openIn(t, env.name, sc.language)
	ended := false
	for i, st := range sc.steps {
		time.Sleep(st.pause)
		a := s.call(t, strings.ReplaceAll(st.code, markerPlaceholder, marker), st.files...)
		if ended = a.gone() || a.SessionEnded; ended && st.mayEnd == "" {
			t.Fatalf("step %d ended the session: %s", i+1, a)
		}
		check := st.want
		if check == nil {
			check = ok("")
		}
		if diffs := check(a); len(diffs) > 0 {
			t.Fatalf("step %d (%.60q): %s\n%s", i+1, st.code, strings.Join(diffs, "; "), a)
		}
		if ended {
			if !strings.Contains(a.reason(), st.mayEnd) {
				t.Errorf("step %d ended the session saying %q, want %q", i+1, a.reason(), st.mayEnd)
			}
			break
		}
	}
	s.close(t)
	// Its container is removed in the background after the answer.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && survivor(marker) {
		time.Sleep(200 * time.Millisecond)
	}
	assertNoSurvivor(t, marker)
}

// survivor reports whether a host process's command line holds marker.
func survivor(marker string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(cmdline, []byte(marker)) {
			return true
		}
	}
	return false
}

// sessionClient calls one service's session routes; every answer must be
// below 500.
type sessionClient struct {
	t    *testing.T
	base string
}

// liveSession is one open session of a client.
type liveSession struct {
	c  *sessionClient
	id string
}

// callAnswer is a call's answer: the HTTP status, the body, decoded.
type callAnswer struct {
	wire.SessionCodeResponse
	Error string `json:"error"`
	code  int
	body  string
}

// String shows the answer for a failure message.
func (a callAnswer) String() string { return fmt.Sprintf("HTTP %d %s", a.code, clip(a.body)) }

// gone reports a 404: the session had ended before the call.
func (a callAnswer) gone() bool { return a.code == http.StatusNotFound }

// reason is why the session ended: the answer's reason, or the 404's.
func (a callAnswer) reason() string {
	if a.gone() {
		return a.Error
	}
	return a.SessionEndReason
}

// do sends one request and returns its status and body; a 5xx or a
// failed request fails the test.
func (c *sessionClient) do(tb testing.TB, method, path string, body any) (int, []byte) {
	tb.Helper()
	var in io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		in = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, in)
	if err != nil {
		tb.Fatal(err)
	}
	client := http.Client{Timeout: 2 * time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 {
		tb.Fatalf("%s %s: HTTP %d %s", method, path, resp.StatusCode, out)
	}
	return resp.StatusCode, out
}

// open opens a session in env, in its default language; it must be 201.
func (c *sessionClient) open(tb testing.TB, env string) *liveSession {
	tb.Helper()
	return c.openIn(tb, env, "")
}

// openIn opens a session in env in the language ("" is env's default); it
// must be 201.
func (c *sessionClient) openIn(tb testing.TB, env, language string) *liveSession {
	tb.Helper()
	req := map[string]string{"environment": env}
	if language != "" {
		req["language"] = language
	}
	code, body := c.do(tb, "POST", "/v1/sessions", req)
	var o wire.SessionResponse
	if err := json.Unmarshal(body, &o); err != nil || code != http.StatusCreated || o.SessionID == "" {
		tb.Fatalf("open %s: HTTP %d %s", env, code, body)
	}
	return &liveSession{c: c, id: o.SessionID}
}

// call runs code in the session with files in.
func (s *liveSession) call(tb testing.TB, code string, files ...sandboxd.File) callAnswer {
	tb.Helper()
	type fileIn struct {
		Name    string `json:"name"`
		Content string `json:"content"`
	}
	in := []fileIn{}
	for _, f := range files {
		in = append(in, fileIn{f.Name, base64.StdEncoding.EncodeToString(f.Content)})
	}
	status, body := s.c.do(tb, "POST", "/v1/sessions/"+s.id+"/code", map[string]any{"code": code, "files": in})
	a := callAnswer{code: status, body: string(body)}
	if err := json.Unmarshal(body, &a); err != nil || (status != http.StatusOK && status != http.StatusNotFound) {
		tb.Fatalf("call: %s (%v)", a, err)
	}
	return a
}

// close ends the session: 204, or 404 when it had ended already.
func (s *liveSession) close(tb testing.TB) {
	tb.Helper()
	if code, body := s.c.do(tb, "DELETE", "/v1/sessions/"+s.id, nil); code != http.StatusNoContent && code != http.StatusNotFound {
		tb.Errorf("close: HTTP %d %s", code, body)
	}
	if code, _ := s.c.do(tb, "GET", "/v1/sessions/"+s.id, nil); code != http.StatusNotFound {
		tb.Errorf("the session answers %d after its close, want 404", code)
	}
}
