package httpapi

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"sandboxd"
	"sandboxd/httpapi/ingress"
	"sandboxd/httpapi/wire"
)

// SessionSettings describe the sessions to the handlers and to callers
// (/v1/version, OpenAPI, discovery).
type SessionSettings struct {
	// OpenPrice is the price of opening a session (sessions.open_price),
	// "" for payments.price.
	OpenPrice string
	// Max is how many sessions may be open at once.
	Max int
	// IdleTimeout and MaxLifetime are the sessions' lifetimes.
	IdleTimeout, MaxLifetime time.Duration
}

// openBodyLimit caps the body of POST /v1/sessions: it names a language
// and an environment, nothing more.
const openBodyLimit = 4 << 10

// sessionsPath is the path of the sessions, and the prefix of each one's;
// sessionCodeResource is the path a session's calls are quoted and paid
// for: the route's template, the same for every session (an id is a
// capability, and a payment's resource reaches the facilitator and the
// bazaar).
const (
	sessionsPath        = "/v1/sessions"
	sessionCodeResource = sessionsPath + "/{session_id}/code"
)

// openRequest is the body of POST /v1/sessions.
type openRequest struct {
	Language    *string `json:"language"`
	Environment *string `json:"environment"`
}

// registerSessions adds the session routes to r.
func (s *Server) registerSessions(r *mux.Router) {
	r.HandleFunc(sessionsPath, s.sessionsOn(s.handleOpenSession)).Methods(http.MethodPost)
	r.HandleFunc(sessionsPath+"/{id}/code", s.sessionsOn(s.locatedOr(s.handleSessionCode, s.answerEndedCall))).Methods(http.MethodPost)
	r.HandleFunc(sessionsPath+"/{id}", s.sessionsOn(s.located(s.handleGetSession))).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc(sessionsPath+"/{id}", s.sessionsOn(s.located(s.handleCloseSession))).Methods(http.MethodDelete)
}

// sessionsOn answers 404 for every session route when sessions are off.
func (s *Server) sessionsOn(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.Sessions == nil {
			s.writeError(w, r, sandboxd.Errorf(sandboxd.CodeNotFound, "httpapi.route",
				"sessions are off on this service (sessions.enabled is false); run each program with POST /v1/code"))
			return
		}
		h(w, r)
	}
}

// handleOpenSession opens a session through the paid flow (openSession);
// a retry of an opening already answered gets the stored answer, its
// session (answerReplay).
func (s *Server) handleOpenSession(w http.ResponseWriter, r *http.Request) {
	lang, env, err := s.parseOpen(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ext := s.sessionOpenExtensions()
	out, err := s.openSession(r.Context(), lang, env, s.httpPayment(r, sessionsPath, env, ext))
	if rep := replayOf(err); rep != nil {
		s.answerReplay(r.Context(), w, r, rep)
		return
	}
	if err != nil && out.Info.ID != "" {
		s.writePendingSession(w, r, err, wire.NewSessionResponse(out.Info))
		return
	}
	if err != nil {
		s.writeError(w, r, withExtensions(err, ext))
		return
	}
	addSettlement(w.Header(), out.Settlement)
	noStore(w.Header()) // the id is a capability
	out.Answer.write(w, nil)
}

// pendingSessionBody is the answer (202) of an opening whose settlement is
// pending: the pending settlement's body and the session, which is kept.
type pendingSessionBody struct {
	pendingBody
	wire.SessionResponse
}

// writePendingSession answers an opening whose settlement is pending (err,
// CodePending) with the session it opened: 202, the settlement's report in
// PAYMENT-RESPONSE, and the session's id beside the pending body.
func (s *Server) writePendingSession(w http.ResponseWriter, r *http.Request, err error, open wire.SessionResponse) {
	var e *sandboxd.Error
	if !errors.As(err, &e) || e.Payment == nil {
		s.writeError(w, r, err)
		return
	}
	pending, _ := addPayment(w.Header(), e, pendingBody{}).(pendingBody)
	s.Log.Warn("session kept: its opening's settlement is pending", "path", logPath(r.URL.Path), "err", err)
	writeJSON(w, http.StatusAccepted, pendingSessionBody{pendingBody: pending, SessionResponse: open})
}

// parseOpen reads the body of POST /v1/sessions (none, or an object that
// may name a language and an environment) under the body rules of
// /v1/code, and returns the session's language and environment as
// Catalog.Resolve combines them.
func (s *Server) parseOpen(w http.ResponseWriter, r *http.Request) (lang, env string, err error) {
	body, hold, err := s.readBody(w, r, min(int64(openBodyLimit), s.MaxBodyBytes))
	if err != nil {
		return "", "", err
	}
	hold.Release() // decoded below, kept nowhere
	var req openRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeObject(body, s.requestLimits(openShape), &req); err != nil {
			return "", "", err
		}
	}
	return s.resolve(req.Language, req.Environment)
}

// handleSessionCode runs a program in a session through the paid flow
// (callSession); an unknown, ended or expired session is 404 before the
// body is read or any payment looked at, unless the call is the retry of
// a call already answered (answerEndedCall). A retry of a call already
// answered gets the stored answer (answerReplay), and never runs twice.
func (s *Server) handleSessionCode(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	info, err := s.Sessions.Get(r.Context(), id)
	if err != nil {
		s.answerEndedCall(w, r, err)
		return
	}
	job, hold, err := s.parseSessionJob(w, r, info)
	defer hold.Release()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ext := s.sessionCallExtensions()
	ctx := ingress.WithHold(r.Context(), hold)
	out, err := s.callSession(ctx, id, job, s.httpPayment(r, sessionCodeResource, info.Environment, ext))
	if rep := replayOf(err); rep != nil {
		s.answerReplay(ctx, w, r, rep)
		return
	}
	if err != nil {
		s.writeError(w, r, withExtensions(err, ext))
		return
	}
	addSettlement(w.Header(), out.Settlement)
	noStore(w.Header())
	out.Answer.write(w, nil)
}

// parseSessionJob reads a call's body, the body of POST /v1/code under the
// same rules (the body budget, the decoding, the caps), into a Job in the
// session's environment and language (info). The body may not name an
// environment, and may name the session's language only: a session keeps
// its own. The body's room in the budget is returned with the job, as
// parseJob's.
func (s *Server) parseSessionJob(w http.ResponseWriter, r *http.Request, info sandboxd.SessionInfo) (sandboxd.Job, *ingress.Hold, error) {
	body, hold, err := s.readBody(w, r, s.MaxBodyBytes)
	if err != nil {
		return sandboxd.Job{}, nil, err
	}
	var req codeRequest
	if err := decodeObject(body, s.requestLimits(requestShape), &req); err != nil {
		return sandboxd.Job{}, hold, err
	}
	job, err := s.newSessionJob(info, req)
	return job, hold, err
}

// newSessionJob validates a call's request (from HTTP or MCP) into a Job
// in session info: no environment, a language only if the session's. A
// zero info is a session no longer known.
func (s *Server) newSessionJob(info sandboxd.SessionInfo, req codeRequest) (sandboxd.Job, error) {
	if req.Environment != nil {
		return sandboxd.Job{}, sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.validate",
			`field "environment" is not accepted here: a session keeps the environment it was opened in (%s); leave it out`,
			info.Environment)
	}
	if info.Language == "" {
		// A session no longer known (a retry's probe): the call runs
		// what its body names, as a run would.
		return s.newJob(req)
	}
	if err := s.sessionLanguage(info, req.Language); err != nil {
		return sandboxd.Job{}, err
	}
	req.Language, req.Environment = &info.Language, &info.Environment
	return s.newJob(req)
}

// handleGetSession answers a session's state.
func (s *Server) handleGetSession(w http.ResponseWriter, r *http.Request) {
	i, err := s.Sessions.Get(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	state := wire.SessionState{SessionID: i.ID, Environment: i.Environment, Language: i.Language, CreatedAt: wire.Stamp(i.Created), Calls: i.Calls,
		ExpiresAt: wire.Stamp(i.Expires), Busy: i.Busy}
	if !i.LastCall.IsZero() {
		last := wire.Stamp(i.LastCall)
		state.LastCallAt = &last
	}
	noStore(w.Header())
	writeJSON(w, http.StatusOK, state)
}

// handleCloseSession ends a session: 204 once its container is gone.
func (s *Server) handleCloseSession(w http.ResponseWriter, r *http.Request) {
	if err := s.Sessions.Close(r.Context(), mux.Vars(r)["id"]); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// shortSessionID is a session id as the logs show it: its first 8 characters.
func shortSessionID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// logPath is a request's path as the logs show it: a session's id is a
// capability, so only its first characters are kept.
func logPath(path string) string {
	rest, ok := strings.CutPrefix(path, sessionsPath+"/")
	if !ok {
		return path
	}
	id, tail, _ := strings.Cut(rest, "/")
	if tail != "" {
		tail = "/" + tail
	}
	return sessionsPath + "/" + shortSessionID(id) + "…" + tail
}
