package httpapi

import (
	"net/http"
	"sandboxd/x402"
	"slices"
	"strings"
)

// CORS for the API (/v1/*): a portal or a docs site on another origin calls
// it from a browser. No cookie or credential is ever used (a call is paid
// by its own signed payment), so allowing every origin grants nothing an
// origin could not do with curl; Access-Control-Allow-Credentials is never
// sent. The page, /mcp and anything else answer no CORS headers.
const (
	corsAllowMethods = "GET, HEAD, POST, DELETE"
	// corsAllowHeaders are the request headers a cross-origin call may
	// send: the JSON body's type and the x402 payments (v2 and v1).
	corsAllowHeaders = "Content-Type, PAYMENT-SIGNATURE, X-PAYMENT"
	// corsExposeHeaders are the answer headers a cross-origin script may
	// read: without them a browser's x402 client cannot read the terms,
	// the settlement, when to retry, or that an answer is a replay.
	corsExposeHeaders = "PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-PAYMENT-RESPONSE, Retry-After, " + x402.HeaderIdempotentReplayed
	corsMaxAge        = "600"
)

// corsPrefix is the path prefix of the routes that answer CORS.
const corsPrefix = "/v1/"

// cors wraps next with the CORS answers for /v1/*: the preflight (OPTIONS
// with Access-Control-Request-Method) is answered here, 204, and every
// other request from an allowed origin gets the allow and expose headers.
// An origin not in CORSOrigins gets no CORS header, so the browser keeps
// the answer from its script; its preflight is answered 403.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if !strings.HasPrefix(r.URL.Path, corsPrefix) || origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		allowed := s.allowOrigin(origin)
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if allowed != "" {
			h.Set("Access-Control-Allow-Origin", allowed)
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		}
		if !preflight {
			next.ServeHTTP(w, r)
			return
		}
		if allowed == "" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		h.Add("Vary", "Access-Control-Request-Method")
		h.Add("Vary", "Access-Control-Request-Headers")
		h.Set("Access-Control-Allow-Methods", corsAllowMethods)
		h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
		h.Set("Access-Control-Max-Age", corsMaxAge)
		w.WriteHeader(http.StatusNoContent)
	})
}

// allowOrigin returns the Access-Control-Allow-Origin value for origin:
// "*" when every origin is allowed, origin itself when it is listed, else
// "".
func (s *Server) allowOrigin(origin string) string {
	if slices.Contains(s.CORSOrigins, "*") {
		return "*"
	}
	if slices.ContainsFunc(s.CORSOrigins, func(o string) bool { return strings.EqualFold(o, origin) }) {
		return origin
	}
	return ""
}
