package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"sandboxd"
	"sandboxd/httpapi/fleethop"
	"sandboxd/httpapi/ingress"
)

// hopDialTimeout bounds the connection to another replica: a replica that
// does not take it within this long is as good as gone for this call.
const hopDialTimeout = 5 * time.Second

// newHopTransport is the transport of the hops: keep-alive connections to
// the other replicas, HTTP/1.1 (the internal address is plain HTTP), no
// proxy from the environment.
func newHopTransport() http.RoundTripper {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: hopDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: hopDialTimeout,
	}
}

// ReplicaURL checks raw as the address of a replica of the fleet: an
// http or https URL with a host and an optional port, and no user, path,
// query or fragment (a forwarded call keeps its own path). When the fleet
// lists its replicas' addresses (replicas: server.trusted_proxies, where
// the docs have a fleet list them), the host must also be an IP address
// among them. It is the rule of server.advertise_url at start and of every
// address the registry names, before a call is sent there, payment
// headers and all: once the replicas are listed, whoever can write the
// registry can point a forward at another replica and nowhere else (an
// operator who lists none keeps the names a fleet of old may use, and the
// start-up log says forwards are not pinned). It returns the URL, scheme
// and host alone.
func ReplicaURL(raw string, replicas []netip.Prefix) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawPath != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" ||
		strings.Contains(raw, "#") || u.Opaque != "" {
		return nil, fmt.Errorf("%q is not a base URL such as http://10.0.0.11:8080 (http or https, a host, "+
			"a port if not the scheme's; no user, path, query or fragment)", raw)
	}
	if len(replicas) == 0 {
		return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
	}
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil || a.Zone() != "" {
		return nil, fmt.Errorf("%q names its host %q, not by an IP address such as 10.0.0.11: with server.trusted_proxies "+
			"set, a replica is reached at an address listed there, never at a name", raw, u.Hostname())
	}
	if !ingress.Trusted(replicas, a.Unmap()) {
		return nil, fmt.Errorf("%q: %s is not among server.trusted_proxies, where every replica of a fleet is "+
			"listed; the replicas forward calls to those addresses alone", raw, a)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// forward sends the call r, whole, to the replica to, which holds its
// session, and streams its answer back. The body is r's, streamed as it
// arrives, or body when the caller read it already (MCP). The request
// keeps its method, path, Host and headers, payment headers included; the
// X-Forwarded-* headers are dropped (the hop names the caller, signed).
// The owner does the payment check, the run and the settlement: this
// replica settles nothing. The whole hop is bounded by Fleet.Limit.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, to holder, body []byte) {
	ctx, cancel := context.WithTimeout(r.Context(), s.Fleet.Limit(to.environment))
	defer cancel()
	if body != nil {
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	client, _ := s.ingressClients().Addr(r)
	// The holder's answer is the answer, headers and all: what this replica
	// set already (CORS, nosniff) would be sent twice, and a browser refuses
	// an Access-Control-Allow-Origin twice. They are kept for an answer of
	// this replica's own (the holder did not answer).
	own := w.Header().Clone()
	clear(w.Header())
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(to.url)
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Set(fleethop.Header, fleethop.Sign(s.Fleet.Secret, time.Now(), pr.Out.Method, pr.Out.URL.EscapedPath(), client,
				s.Fleet.Replica, to.replica))
		},
		Transport: s.Fleet.transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil && ctx.Err() == nil {
				return // the caller hung up
			}
			maps.Copy(w.Header(), own)
			s.writeError(w, r, &sandboxd.Error{Code: sandboxd.CodeUnavailable, Op: "httpapi.forward", RetryAfter: 2 * time.Second,
				Err: fmt.Errorf("replica %s at %s: %w", to.replica, to.url, err),
				Message: "the replica that holds this session did not answer; retry after the time in Retry-After " +
					"(a payment sent with this call is settled or released by that replica, never twice); " +
					"if the replica is gone, the session ends once its lease runs out"})
		},
	}
	s.Log.Debug("forwarding a session call", "path", logPath(r.URL.Path), "to", to.replica, "url", to.url.String())
	proxy.ServeHTTP(w, r.WithContext(ctx))
}
