package httpapi

import (
	"mime"
	"net/http"
	"strings"

	"sandboxd"
	"sandboxd/httpapi/mcptools"
)

// browserJSON refuses, 415, a POST that runs or pays (/v1/* and /mcp) when
// it comes from a browser (it carries Origin) and its body is not declared
// application/json. A page may send text/plain, a form's types or none
// without asking the service first: a "simple" request, which a browser
// sends to any origin without a preflight. application/json is not
// simple, so a browser sends it only after the service's CORS answer let
// the page's origin in. Without this, a page on any origin that a visitor
// opens could run programs on an internal, free instance. curl and agents
// send no Origin and keep any type (curl -d sends a form's). The page's own
// origin gets the same rule: its fetch sends application/json.
func (s *Server) browserJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Origin") == "" || !runsOrPays(r.URL.Path) || isJSON(r.Header.Get("Content-Type")) {
			next.ServeHTTP(w, r)
			return
		}
		err := sandboxd.Errorf(sandboxd.CodeMediaType, "httpapi.browser",
			"a request from a browser (with an Origin header) must send Content-Type: application/json, got %q", r.Header.Get("Content-Type"))
		if r.URL.Path == mcptools.Path {
			s.Log.Debug("mcp request refused", "err", err)
			mcptools.WriteError(w, mcpService{s}, err)
			return
		}
		s.writeError(w, r, err)
	})
}

// runsOrPays reports whether path is one where a POST runs a program or
// pays: the API's and MCP's.
func runsOrPays(path string) bool {
	return strings.HasPrefix(path, corsPrefix) || path == mcptools.Path
}

// isJSON reports whether the Content-Type value ct is application/json,
// with any parameters.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}
