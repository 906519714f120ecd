package hostile

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"sandboxd/internal/servicetest"
)

// TestHostileSessionLimits opens past sessions.max (2 here): a 429 with
// Retry-After and no container started; then guessed ids (well formed
// and not) answer 404 "unknown", an expired one (idle_timeout 1s) 404
// "expired", and no id is given twice.
func TestHostileSessionLimits(t *testing.T) {
	// No pool: its refill after an open would count as a container the
	// refused opens started.
	svc := mustSessionService(t, "limits", sessionEnv("runc", "SANDBOX_SESSIONS_MAX=2", "SANDBOX_SESSIONS_IDLE_TIMEOUT=1s",
		"SANDBOX_ENVIRONMENTS_DATA_ENABLED=false", "SANDBOX_ENVIRONMENTS_NODE_ENABLED=false",
		"SANDBOX_RUNTIME_POOL_SIZE=0", "SANDBOX_RUNTIME_POOL_MAX=0"))
	c := &sessionClient{t: t, base: svc.URL}
	seen := map[string]bool{}
	a, b := c.open(t, "python"), c.open(t, "python")
	seen[a.id], seen[b.id] = true, true
	before := len(servicetest.ContainersOf(t, svc.Instance))
	for range 5 {
		req, _ := http.NewRequest("POST", svc.URL+"/v1/sessions", strings.NewReader(`{}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("an open past sessions.max: HTTP %d Retry-After %q, want 429 with it", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	if after := len(servicetest.ContainersOf(t, svc.Instance)); after > before {
		t.Errorf("%d containers after the refused opens, %d before: something started", after, before)
	}
	for _, id := range []string{"ses_" + randomHex(16), randomHex(16), "ses_" + strings.Repeat("0", 32), a.id[:len(a.id)-1] + "x", strings.ToUpper(a.id)} {
		for _, r := range [][2]string{{"GET", ""}, {"POST", "/code"}, {"DELETE", ""}} {
			code, body := c.do(t, r[0], "/v1/sessions/"+id+r[1], map[string]string{"code": "1"})
			var e struct{ Error string }
			_ = json.Unmarshal(body, &e)
			if code != http.StatusNotFound || (strings.HasPrefix(id, "ses_") && !strings.Contains(e.Error, "unknown")) {
				t.Errorf("%s of guessed id %q: HTTP %d %s, want 404 unknown", r[0], id, code, body)
			}
		}
	}
	time.Sleep(3 * time.Second) // past the idle timeout and a sweep
	for _, s := range []*liveSession{a, b} {
		code, body := c.do(t, "GET", "/v1/sessions/"+s.id, nil)
		if code != http.StatusNotFound || !strings.Contains(string(body), "expired") {
			t.Errorf("an expired id: HTTP %d %s, want 404 saying it expired", code, body)
		}
		if a := s.call(t, "1"); !a.gone() || !strings.Contains(a.Error, "expired") {
			t.Errorf("a call in an expired session: %s", a)
		}
	}
	for range 4 {
		s := c.open(t, "python")
		if seen[s.id] {
			t.Fatalf("id %s given twice", s.id[:8])
		}
		seen[s.id] = true
		s.close(t)
	}
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
