package httpapi

import (
	"context"
	"net/http"
	"net/netip"
	"time"

	"sandboxd/httpapi/fleethop"
)

// hopKey is the context key of a verified hop's caller address.
type hopKey struct{}

// hopClient returns the caller's address of a request forwarded by another
// replica, verified; ok is false for a request that came straight in.
func hopClient(ctx context.Context) (netip.Addr, bool) {
	a, ok := ctx.Value(hopKey{}).(netip.Addr)
	return a, ok
}

// fleetHops verifies the hop header (package fleethop) of every request
// that carries one:
// 403 when it does not verify, else the request goes on marked forwarded
// (hopClient), never to be forwarded again.
func (s *Server) fleetHops(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		value := r.Header.Get(fleethop.Header)
		if value == "" {
			next.ServeHTTP(w, r)
			return
		}
		var secret []byte
		var self string
		if s.Fleet != nil {
			secret, self = s.Fleet.Secret, s.Fleet.Replica
		}
		now := time.Now()
		hop, err := fleethop.Verify(secret, self, now, value, r)
		if err == nil {
			err = s.Fleet.seen().Take(hop, now)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		r.Header.Del(fleethop.Header)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), hopKey{}, hop.Client)))
	})
}
