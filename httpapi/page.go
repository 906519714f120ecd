package httpapi

import (
	"bytes"
	"embed"
	"net/http"
	"path"
	"time"

	"github.com/gorilla/mux"
)

// pageFiles are the try-it page's assets: HTML, CSS and JavaScript written
// by hand, with no build step, served from the binary.
//
//go:embed web/index.html web/page.css web/page.js web/session.js web/language.js
var pageFiles embed.FS

// pageCSP is the page's Content-Security-Policy: scripts, styles and calls
// from this origin only, nothing inline, no frames, no forms, no plugins;
// images also from blob: URLs, which page.js makes of the image files a run
// returns (PNG, JPEG, GIF and WebP only, never SVG). A program's output is
// inserted as text (page.js), so even a policy bypass would find no markup
// of a program's making in the document.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// pageRoutes maps each URL path of the page to its asset and content type.
var pageRoutes = map[string]struct{ file, contentType string }{
	"/":         {"web/index.html", "text/html; charset=utf-8"},
	"/page.css": {"web/page.css", "text/css; charset=utf-8"},
	"/page.js":  {"web/page.js", "text/javascript; charset=utf-8"},
	// session.js keeps the "keep state between runs" session; page.js uses it.
	"/session.js": {"web/session.js", "text/javascript; charset=utf-8"},
	// language.js keeps the language switch and the environment chooser.
	"/language.js": {"web/language.js", "text/javascript; charset=utf-8"},
}

// registerPage adds the try-it page's routes to r: GET and HEAD of /, of
// its stylesheet and of its script.
func (s *Server) registerPage(r *mux.Router) {
	for p, a := range pageRoutes {
		body, err := pageFiles.ReadFile(a.file)
		if err != nil {
			panic("httpapi: page asset missing from the binary: " + a.file) // a build error, caught by every test
		}
		r.Handle(p, pageAsset(path.Base(a.file), a.contentType, body)).Methods(http.MethodGet, http.MethodHead)
	}
}

// pageAsset serves one embedded asset with the page's security headers.
func pageAsset(name, contentType string, body []byte) http.Handler {
	modified := time.Unix(0, 0)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Set("Content-Security-Policy", pageCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, name, modified, bytes.NewReader(body))
	})
}
