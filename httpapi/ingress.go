package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"

	"sandboxd"
	"sandboxd/httpapi/ingress"
)

// The Server's fields configure package ingress anew on each request (a
// change shows on the next one); what the requests share, the body budget
// and the count of each client's bodies, is the Server's bodies.

// ingressClients finds a request's client: behind TrustedProxies, or the
// caller a fleet's hop names (fleet_hop.go).
func (s *Server) ingressClients() ingress.Clients {
	return ingress.Clients{TrustedProxies: s.TrustedProxies, Hop: hopClient}
}

// bodyLimits are the bounds of the bodies the Server reads.
func (s *Server) bodyLimits() ingress.Limits {
	return ingress.Limits{
		MaxBodyBytes:       s.MaxBodyBytes,
		BodyBudget:         s.BodyBudget,
		MinBodyRate:        s.MinBodyRate,
		BodyGrace:          s.BodyGrace,
		ReadTimeout:        s.ReadTimeout,
		MaxBodiesPerClient: s.MaxBodiesPerClient,
		Clients:            s.ingressClients(),
	}
}

// readBody reads at most limit bytes of r's body (ingress.Bodies.Read).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *ingress.Hold, error) {
	return s.bodies.Read(w, r, limit, s.bodyLimits())
}

// clients puts each request's client in its context (ingress.ClientFrom),
// for the caps counted deeper down than the request (the free sessions').
func (s *Server) clients(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a, ok := s.ingressClients().Addr(r); ok {
			r = r.WithContext(ingress.WithClient(r.Context(), a))
		}
		next.ServeHTTP(w, r)
	})
}

// LimitConns returns ln, accepting at most perClient connections at once
// from one client address (ingress.LimitConns); perClient <= 0 returns ln
// itself. A connection over the cap is answered at once with a 429 that
// says why, then closed, without reading its request. Peers in trusted are
// not capped: their clients' bodies are capped by MaxBodiesPerClient.
func LimitConns(ln net.Listener, perClient int, trusted []netip.Prefix, log *slog.Logger) net.Listener {
	return ingress.LimitConns(ln, perClient, trusted, log, connRefusal)
}

// connRefusal is the raw HTTP/1.1 answer of err to a connection no handler
// reads, with the status of the one mapping.
func connRefusal(err error) []byte {
	body, _ := json.Marshal(errorBody{Error: sandboxd.ErrorMessage(err)})
	status := statusOf(sandboxd.ErrorCode(err))
	retry := 0
	var e *sandboxd.Error
	if errors.As(err, &e) {
		retry = retrySeconds(e.RetryAfter)
	}
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nRetry-After: %d\r\n"+
		"X-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s\n",
		status, http.StatusText(status), retry, len(body)+1, body)
}
