package httpapi

import "net/http"

// resourceURL is the public URL of path, the route r called, as quoted in
// payment terms, sent to the facilitator and listed by a bazaar: so the
// caller must not choose it, and path is the route's template, never a
// path that holds a capability (a session's id). PublicURL, when set, names
// the service alone. Else it is built from the request's Host, and from
// X-Forwarded-Proto and X-Forwarded-Host only when the peer is a trusted
// proxy (anyone else could write them).
func (s *Server) resourceURL(r *http.Request, path string) string {
	if s.PublicURL != "" {
		return s.PublicURL + path
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := r.Host
	if s.ingressClients().FromTrustedProxy(r) {
		if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
			scheme = p
		}
		if h := r.Header.Get("X-Forwarded-Host"); h != "" {
			host = h
		}
	}
	return scheme + "://" + host + path
}
