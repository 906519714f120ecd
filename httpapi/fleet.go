package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"sandboxd/httpapi/fleethop"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"sandboxd"
	"sandboxd/httpapi/ingress"
)

// Fleet is what a replica of a fleet needs to answer for sessions held by
// the others: the registry that says where each lives, and the secret that
// signs a forwarded call. A call for a session this replica does not hold
// is forwarded, whole and before anything of it is read or paid, to the
// replica that holds it; that replica checks the payment, runs the call
// and settles it, as if it had been called itself. A session whose replica
// is gone is a 404 that says so, and nothing is charged.
type Fleet struct {
	// Registry locates sessions (the ledger's sessions table).
	Registry sandboxd.SessionRegistry
	// Replica is this replica's id (payments.replica_id).
	Replica string
	// Secret signs and verifies the hops (server.fleet_secret_file).
	Secret []byte
	// Limit bounds a forwarded call of a session in environment: the
	// environment's timeout plus the paid flow's budget around it.
	Limit func(environment string) time.Duration
	// Transport carries the hops; nil means a transport of its own.
	Transport http.RoundTripper

	once      sync.Once
	transport http.RoundTripper
	lookups   chan struct{}
	// looking counts each client's lookups in flight.
	looking ingress.Counter
	hops    fleethop.Seen
}

// maxLookups bounds the registry lookups in flight on one replica: a
// flood of calls for ids nobody holds costs each one a query of the shared
// database, and must not take it from the paid calls.
const maxLookups = 32

// maxLookupsPerClient bounds one client's lookups in flight
// (ingress.Clients.Addr, as the per-client caps count): a client flooding
// calls for random ids is refused past it at once, and leaves the rest of
// maxLookups to the others. A lookup takes about a millisecond, so an honest client seldom
// has more than one in flight.
const maxLookupsPerClient = 4

// lookupWait is how long a lookup waits for its turn before the call is
// refused as busy.
const lookupWait = time.Second

// init fills in the defaults.
func (f *Fleet) init() {
	f.once.Do(func() {
		f.lookups = make(chan struct{}, maxLookups)
		f.transport = f.Transport
		if f.transport == nil {
			f.transport = newHopTransport()
		}
	})
}

// seen is the fleet's memory of the hops taken.
func (f *Fleet) seen() *fleethop.Seen {
	return &f.hops
}

// locate says where session id lives, as the registry knows it, for the
// caller at client (ok false: an address it could not read, not counted).
// A client with maxLookupsPerClient lookups in flight already is CodeBusy
// at once; a lookup that cannot have its turn among maxLookups within
// lookupWait is CodeBusy too.
func (f *Fleet) locate(ctx context.Context, client netip.Addr, ok bool, id string) (sandboxd.SessionPlace, error) {
	f.init()
	if ok {
		key := ingress.Key(client)
		if !f.looking.Take(key, maxLookupsPerClient) {
			return sandboxd.SessionPlace{}, &sandboxd.Error{Code: sandboxd.CodeBusy, Op: "httpapi.fleet", RetryAfter: time.Second,
				Message: fmt.Sprintf("your address is already having %d sessions looked up at once, the most one client may; "+
					"nothing was charged, retry after the time in Retry-After", maxLookupsPerClient)}
		}
		defer f.looking.Give(key)
	}
	timer := time.NewTimer(lookupWait)
	defer timer.Stop()
	select {
	case f.lookups <- struct{}{}:
	case <-timer.C:
		return sandboxd.SessionPlace{}, &sandboxd.Error{Code: sandboxd.CodeBusy, Op: "httpapi.fleet", RetryAfter: time.Second,
			Message: "too many calls for sessions are being looked up at once; nothing was charged, retry after the time in Retry-After"}
	case <-ctx.Done():
		return sandboxd.SessionPlace{}, ctx.Err()
	}
	defer func() { <-f.lookups }()
	return f.Registry.Locate(ctx, sandboxd.SessionHash(id))
}

// placement is what a replica does with a call for a session.
type placement int

const (
	// serveHere: this replica holds the session, or nobody does (the
	// local table answers its own 404).
	serveHere placement = iota
	// forwardThere: another live replica holds it.
	forwardThere
)

// holder is the replica a call for a session held elsewhere goes to.
type holder struct {
	// replica is its id, for the hop and the log (never for the caller).
	replica string
	// url is its address, checked (ReplicaURL).
	url *url.URL
	// environment is the session's (Fleet.Limit).
	environment string
}

// place decides where the call r for session id is served: here, or at
// the holder returned. A session whose replica is gone, or that ended
// elsewhere, is the CodeNotFound error that says so; one whose recorded
// address is not a replica's (ReplicaURL) is CodeInternal, and nothing is
// forwarded. A call another replica forwarded is always served here. The
// errors name no replica and no address: those go to the log.
func (s *Server) place(r *http.Request, id string) (placement, holder, error) {
	var none holder
	if s.Fleet == nil || s.Sessions == nil {
		return serveHere, none, nil
	}
	if _, forwarded := hopClient(r.Context()); forwarded {
		return serveHere, none, nil
	}
	_, err := s.Sessions.Get(r.Context(), id)
	if sandboxd.ErrorCode(err) != sandboxd.CodeNotFound {
		return serveHere, none, nil
	}
	client, ok := s.ingressClients().Addr(r)
	p, err := s.Fleet.locate(r.Context(), client, ok, id)
	switch {
	case sandboxd.ErrorCode(err) == sandboxd.CodeNotFound:
		return serveHere, none, nil
	case err != nil:
		return serveHere, none, err
	case p.Ended:
		return serveHere, none, &sandboxd.Error{Code: sandboxd.CodeNotFound, Op: "httpapi.fleet",
			Message: p.Why + "; open a new one with POST /v1/sessions", Err: fmt.Errorf("held by replica %s", p.Replica)}
	case p.Here:
		return serveHere, none, nil
	}
	u, err := ReplicaURL(p.URL, s.TrustedProxies)
	if err != nil {
		return serveHere, none, &sandboxd.Error{Code: sandboxd.CodeInternal, Op: "httpapi.fleet",
			Message: "the fleet's registry names an address no replica may have; nothing was forwarded",
			Err:     fmt.Errorf("replica %s: %w", p.Replica, err)}
	}
	return forwardThere, holder{replica: p.Replica, url: u, environment: p.Environment}, nil
}

// located serves a session's route here, or forwards it to the replica
// that holds the session (place).
func (s *Server) located(h http.HandlerFunc) http.HandlerFunc { return s.locatedOr(h, s.writeError) }

// locatedOr is located, with place's refusals (a session ended elsewhere,
// or whose replica is gone) answered by refuse.
func (s *Server) locatedOr(h http.HandlerFunc, refuse func(http.ResponseWriter, *http.Request, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		where, to, err := s.place(r, mux.Vars(r)["id"])
		switch {
		case err != nil:
			refuse(w, r, err)
		case where == forwardThere:
			s.forward(w, r, to, nil)
		default:
			h(w, r)
		}
	}
}
