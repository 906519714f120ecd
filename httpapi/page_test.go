package httpapi

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestPageServedWithStrictHeaders: / and its assets are served with a CSP that allows
// scripts, styles and calls from this origin only and nothing inline, and nosniff.
func TestPageServedWithStrictHeaders(t *testing.T) {
	s := newTestServer(&fakeRunner{}, &fakeGate{})
	s.Page = true
	for path, ctype := range map[string]string{"/": "text/html", "/page.js": "text/javascript",
		"/session.js": "text/javascript", "/language.js": "text/javascript", "/page.css": "text/css"} {
		rec := do(t, s.Handler(), "GET", path, "")
		h := rec.Header()
		if rec.Code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), ctype) {
			t.Errorf("GET %s: %d %q", path, rec.Code, h.Get("Content-Type"))
		}
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") || strings.Contains(csp, "data:") || !strings.Contains(csp, "img-src 'self' blob:;") {
			t.Errorf("GET %s: CSP %q allows something unsafe, or images beyond this origin and blob: URLs", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q", path, h.Get("X-Content-Type-Options"))
		}
		if h.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("GET %s sends CORS headers", path)
		}
	}
}

// TestPageOff: with Page off, / is the API's 404.
func TestPageOff(t *testing.T) {
	s := newTestServer(&fakeRunner{}, &fakeGate{})
	for _, path := range []string{"/", "/page.js", "/session.js", "/language.js", "/page.css"} {
		if rec := do(t, s.Handler(), "GET", path, ""); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s with the page off: %d, want 404", path, rec.Code)
		}
	}
}

// TestPageAssetsNeedNoUnsafeInline: the page holds no inline script, no inline style
// and no event-handler attribute (the CSP would block them), inserts nothing as HTML,
// shows no SVG a run returns, and stays under 60 KB.
func TestPageAssetsNeedNoUnsafeInline(t *testing.T) {
	total := 0
	err := fs.WalkDir(pageFiles, "web", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := pageFiles.ReadFile(path)
		total += len(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total >= 60_000 {
		t.Errorf("the page's assets are %d bytes, over 60 KB", total)
	}
	html, _ := pageFiles.ReadFile("web/index.html")
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]`), // a script with a body
		regexp.MustCompile(`<style`),
		regexp.MustCompile(`\sstyle=`),
		regexp.MustCompile(`\son[a-z]+=`),
		regexp.MustCompile(`javascript:`),
	} {
		if m := bad.Find(html); m != nil {
			t.Errorf("index.html holds %q, which the CSP blocks", m)
		}
	}
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAll(html, -1) {
		if !strings.Contains(string(tag), ` src="/`) {
			t.Errorf("script %s is not loaded from this origin", tag)
		}
	}
	for _, name := range []string{"page.js", "session.js", "language.js"} {
		js, _ := pageFiles.ReadFile("web/" + name)
		for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			if strings.Contains(string(js), sink) {
				t.Errorf("%s uses %s: output must go in as text", name, sink)
			}
		}
		if strings.Contains(strings.ToLower(string(js)), "image/svg") {
			t.Errorf("%s mentions SVG: a run's SVG file may hold script and is never shown as an image", name)
		}
	}
}

// TestCORS: /v1/* answers preflights for POST with Content-Type and PAYMENT-SIGNATURE and
// exposes the x402 headers; credentials are never allowed; /, /mcp and unknown origins
// get no CORS headers.
func TestCORS(t *testing.T) {
	s := newTestServer(&fakeRunner{}, &fakeGate{})
	s.Page = true
	s.CORSOrigins = []string{"*"}
	pre := preflight(t, s, "/v1/code", "https://portal.example")
	h := pre.Header()
	if pre.Code != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "PAYMENT-SIGNATURE") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Content-Type") {
		t.Errorf("preflight: %d %v", pre.Code, h)
	}
	if h.Get("Access-Control-Allow-Credentials") != "" {
		t.Error("credentials allowed")
	}
	req := httptest.NewRequest("POST", "/v1/code", strings.NewReader(`{"code":"print(1)"}`))
	req.Header.Set("Origin", "https://portal.example")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	expose := rec.Header().Get("Access-Control-Expose-Headers")
	for _, want := range []string{"PAYMENT-REQUIRED", "PAYMENT-RESPONSE", "Retry-After", "Idempotent-Replayed"} {
		if !strings.Contains(expose, want) {
			t.Errorf("Access-Control-Expose-Headers %q lacks %s", expose, want)
		}
	}
	for _, path := range []string{"/", "/mcp"} {
		if got := preflight(t, s, path, "https://portal.example").Header().Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("%s answers CORS: %q", path, got)
		}
	}

	s.CORSOrigins = []string{"https://docs.example.com"}
	if got := preflight(t, s, "/v1/code", "https://docs.example.com").Header().Get("Access-Control-Allow-Origin"); got != "https://docs.example.com" {
		t.Errorf("a listed origin gets %q", got)
	}
	other := preflight(t, s, "/v1/code", "https://evil.example")
	if other.Code != http.StatusForbidden || other.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("an unlisted origin: %d %v", other.Code, other.Header())
	}
}

func preflight(t *testing.T, s *Server, path, origin string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("OPTIONS", path, nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type,payment-signature")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}
