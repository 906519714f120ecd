package httpapi

import (
	"context"
	"net/http"

	"github.com/gorilla/mux"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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

// endedCallResult is answerEndedCall over MCP: lang's run tool's call in
// session id, whose session was not found (refused), answered from its
// stored answer when it is the retry of a call already answered, else
// refused as a tool error.
func (s *Server) endedCallResult(ctx context.Context, req *mcp.CallToolRequest, lang, id string, args codeRequest,
	refused error) (*mcp.CallToolResult, error) {
	tool := runToolName(lang)
	if sandboxd.ErrorCode(refused) != sandboxd.CodeNotFound {
		return s.toolFailure(ctx, tool, refused)
	}
	job, err := s.newSessionJob(sandboxd.SessionInfo{}, args)
	if err != nil {
		return s.toolFailure(ctx, tool, refused)
	}
	pay, err := s.runPayment(req, lang, job)
	if err != nil || !s.probes(pay) {
		return s.toolFailure(ctx, tool, refused)
	}
	pay.Environment = "" // the session's, not known any more
	err = s.probeReplay(ctx, forAnswer(pay, sandboxd.AnswerSessionCall, id, job), refused)
	if rep := replayOf(err); rep != nil {
		return s.replayResult(ctx, tool, rep)
	}
	return s.toolFailure(ctx, tool, refused)
}
