// Package httpapi serves the HTTP API: it decodes and validates requests,
// admits them, passes them through the payment gate to the runner, and maps
// every error to its HTTP status in one place (errors.go). It knows only the
// interfaces of package sandboxd, never Docker or go-ethereum.
package httpapi

import (
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/gorilla/mux"

	"sandboxd"
	"sandboxd/httpapi/ingress"
	"sandboxd/httpapi/mcptools"
)

// Server holds what the handlers need. All exported fields are required
// but RunLimit, Page, CORSOrigins, Environments, MaxFiles, MaxFilesBytes,
// BodyBudget and the fields after it.
type Server struct {
	Runner   sandboxd.Runner
	Admitter sandboxd.Admitter
	Gate     sandboxd.PaymentGate
	Log      *slog.Logger
	// MaxBodyBytes caps the request body; a larger one is answered 413.
	MaxBodyBytes int64
	// MaxCodeBytes caps the code field; a larger one is answered 413.
	MaxCodeBytes int
	// RunLimit, when set, bounds a run detached from its caller (a paid run
	// goes on after a hang-up): the run's timeout plus the container's
	// start and removal.
	RunLimit time.Duration
	// MaxStdinBytes caps the stdin field; a larger one is answered 413.
	MaxStdinBytes int
	// Version is reported by GET /v1/version.
	Version VersionInfo
	// Page serves the try-it page at / (page.go); off, / is a 404.
	Page bool
	// CORSOrigins are the origins whose scripts may call /v1/* (cors.go):
	// "*" for any; empty for none.
	CORSOrigins []string
	// Environments are the configured environments a request may name in
	// "environment", listed by discovery; empty means DefaultEnvironment
	// alone.
	Environments []sandboxd.Environment
	// BodyBudget caps the bytes of request bodies being read and decoded
	// at once, across all requests (ingress/body.go); 0 means
	// ingress.DefaultBodyBudgets times MaxBodyBytes.
	BodyBudget int64
	// Sessions are the sessions (sessions.go); nil turns them off: their
	// routes answer 404.
	Sessions sandboxd.Sessions
	// SessionSettings describe the sessions, and price their opening.
	SessionSettings SessionSettings
	// ObservePhase, when set, is handed every phase of every answer of
	// POST /v1/code and of the MCP tool as it is recorded (the metrics'
	// phase histogram); the Server-Timing header lists them either way.
	ObservePhase func(sandboxd.Phase, time.Duration)
	// MaxFiles caps the files of a request (over it, 413) and of an
	// answer (the runtime enforces that side); 0 accepts no files in.
	MaxFiles int
	// MaxFilesBytes caps the decoded bytes of a request's files in all
	// (over it, 413) and of an answer's (the runtime enforces that side).
	MaxFilesBytes int64
	// MinBodyRate is the slowest a body may arrive, in bytes a second on
	// average after BodyGrace (ingress/body_rate.go); slower is cut off
	// with a 408. 0 sets no rate.
	MinBodyRate int64
	// BodyGrace is how long a body may lag behind MinBodyRate: the time
	// before its first bytes must arrive, and the stall it may take later
	// once it has got ahead.
	BodyGrace time.Duration
	// ReadTimeout is the http.Server's ReadTimeout: a body's read deadline
	// never passes it. 0 for none.
	ReadTimeout time.Duration
	// MaxBodiesPerClient caps the bodies one client address
	// (ingress.Clients.Addr) may be sending at once; over it, 429. 0 sets
	// no cap.
	MaxBodiesPerClient int
	// TrustedProxies are the peers whose X-Forwarded-For, -Host and -Proto
	// are believed (ingress/client.go); from any other peer they are ignored.
	TrustedProxies []netip.Prefix
	// PublicURL, when set, is the service's own URL (scheme, host and an
	// optional path prefix, no trailing slash): the resource a payment pays
	// for is named from it alone (meta.go).
	PublicURL string
	// Fleet, when set, finds the sessions other replicas hold and forwards
	// their calls (fleet.go); nil on a single host.
	Fleet *Fleet
	// Retries, when set (payments.retries.enabled, with payments on),
	// declares x402's payment-identifier extension in every paid route's
	// terms (paymentid.go), and asks the gate for a stored answer of a
	// paid request refused before its payment (replay.go: a call to an
	// ended session, an opening refused for room). A retry the gate
	// recognises is answered from its stored answer, set or not.
	Retries bool

	engine engineCache
	bodies ingress.Bodies
}

// Handler returns the routes of the API and the page, CORS around them
// and, inside CORS (so a refused page can read why), the refusal of a
// browser's body that is not application/json (browserJSON); around
// them all, the check of a call forwarded by another replica (fleetHops).
func (s *Server) Handler() http.Handler {
	return s.fleetHops(s.clients(s.cors(s.browserJSON(s.router()))))
}

// router routes each path and method to its handler.
func (s *Server) router() *mux.Router {
	r := mux.NewRouter()
	r.HandleFunc(codePath, s.handleCode).Methods(http.MethodPost)
	r.HandleFunc("/v1/health", s.handleHealth).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/v1/version", s.handleVersion).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/v1/openapi.json", s.handleOpenAPI).Methods(http.MethodGet)
	r.HandleFunc(channelPath, s.handleChannel).Methods(http.MethodGet)
	r.Handle(mcptools.Path, s.mcpHandler()).Methods(http.MethodPost)
	s.registerSessions(r)
	if s.Page {
		s.registerPage(r)
	}
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, sandboxd.Errorf(sandboxd.CodeNotFound, "httpapi.route",
			"no such endpoint %s; the API has POST /v1/code, /v1/sessions, GET /v1/channel, GET /v1/health, GET /v1/version, GET /v1/openapi.json and MCP at /mcp", logPath(r.URL.Path)))
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, sandboxd.Errorf(sandboxd.CodeMethod, "httpapi.route",
			"method %s is not allowed on %s", r.Method, logPath(r.URL.Path)))
	})
	return r
}
