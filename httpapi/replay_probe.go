package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"sandboxd"
	"sandboxd/httpapi/ingress"
)

// answerEndedCall answers a call in a session that was not found (refused,
// CodeNotFound: unknown, ended, expired, or ended on a replica that is
// gone). A call that ended its session (os._exit, the OOM killer) was
// delivered and charged, so its retry must not meet the 404: with retries
// on, a call that carries a payment has its body read and validated as any call's, and
// the gate is asked for its stored answer only (probeReplay), which is
// answered when found (answerReplay). Anything else, a body that does not
// validate included, is answered refused.
func (s *Server) answerEndedCall(w http.ResponseWriter, r *http.Request, refused error) {
	ext := s.sessionCallExtensions()
	pay := s.httpPayment(r, sessionCodeResource, "", ext)
	if sandboxd.ErrorCode(refused) != sandboxd.CodeNotFound || !s.probes(pay) {
		s.writeError(w, r, refused)
		return
	}
	// The session's environment and language are not known any more, and
	// a call's identity holds neither: the body is validated as a call in
	// a session that would run what the body names.
	job, hold, err := s.parseSessionJob(w, r, sandboxd.SessionInfo{})
	defer hold.Release()
	if err != nil {
		s.writeError(w, r, refused)
		return
	}
	ctx := ingress.WithHold(r.Context(), hold)
	err = s.probeReplay(ctx, forAnswer(pay, sandboxd.AnswerSessionCall, mux.Vars(r)["id"], job), refused)
	if rep := replayOf(err); rep != nil {
		s.answerReplay(ctx, w, r, rep)
		return
	}
	s.writeError(w, r, refused)
}
