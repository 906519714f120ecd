package httpapi

import (
	"bytes"
	"context"
	"encoding/json"

	"sandboxd"
	"sandboxd/httpapi/ingress"
	"sandboxd/httpapi/mcptools"
	"sandboxd/httpapi/wire"
)

// The flows as the MCP tools call them (mcptools.Service): a tool's
// arguments are decoded as strictly as the route's body, validated into
// the route's job, and run by the route's flow (execute, callSession,
// openSession, Sessions.Close), so a tool and its route refuse, charge and
// answer alike.

// toolInput is the arguments of a run tool (run_python, …) when sessions
// are off (sessionToolInput's otherwise).
type toolInput struct {
	Code        *string       `json:"code"`
	Stdin       *string       `json:"stdin"`
	Environment *string       `json:"environment"`
	Files       []fileRequest `json:"files"`
}

// sessionToolInput is the arguments of a run tool when sessions are on.
type sessionToolInput struct {
	Code        *string       `json:"code"`
	Stdin       *string       `json:"stdin"`
	Environment *string       `json:"environment"`
	Files       []fileRequest `json:"files"`
	SessionID   *string       `json:"session_id"`
}

// closeToolInput is the arguments of close_session.
type closeToolInput struct {
	SessionID *string `json:"session_id"`
}

// Run runs a run tool's call through execute, as POST /v1/code, or, with
// a session_id, through callSession (callInSession).
func (m mcpService) Run(ctx context.Context, lang string, args json.RawMessage, pay mcptools.Payment) (mcptools.Delivery, error) {
	s := m.s
	req, sessionID, err := s.decodeToolArgs(args)
	if err != nil {
		return mcptools.Delivery{}, err
	}
	req.Language = &lang
	if sessionID != nil {
		return m.callInSession(ctx, lang, *sessionID, req, pay)
	}
	job, err := s.newJob(req)
	if err != nil {
		return mcptools.Delivery{}, err
	}
	p, err := s.runPayment(lang, job, pay)
	if err != nil {
		return mcptools.Delivery{}, err
	}
	phased, _ := s.withPhases(ctx)
	run, err := s.execute(phased, job, p)
	if err != nil {
		return failed(phased, err)
	}
	out := wire.NewCodeResponse(job, run.Result)
	return mcptools.Delivery{Run: &out, Files: run.Result.Files, Body: run.Answer.Body, Settlement: run.Settlement}, nil
}

// failed is the Delivery of a flow's error: err itself, unless it carries
// the Replay of a retry (replayOf), whose stored answer is waited for
// (Replay.Answer) with the body's room given back first.
func failed(ctx context.Context, err error) (mcptools.Delivery, error) {
	rep := replayOf(err)
	if rep == nil {
		return mcptools.Delivery{}, err
	}
	ingress.Release(ctx)
	ans, err := rep.Answer(ctx)
	return mcptools.Delivery{Replay: rep, Stored: ans}, err
}

// decodeToolArgs decodes a run tool's arguments as strictly as an HTTP body,
// into the request they make and the session they name (nil for none;
// always nil when sessions are off, where session_id is an unknown field).
func (s *Server) decodeToolArgs(args json.RawMessage) (codeRequest, *string, error) {
	if err := argsWithin(args, s.MaxBodyBytes); err != nil {
		return codeRequest{}, nil, err
	}
	if s.Sessions == nil {
		var in toolInput
		err := decodeObject(args, s.requestLimits(toolShape), &in)
		return codeRequest{Code: in.Code, Stdin: in.Stdin, Environment: in.Environment, Files: in.Files}, nil, err
	}
	var in sessionToolInput
	err := decodeObject(args, s.requestLimits(sessionToolShape), &in)
	return codeRequest{Code: in.Code, Stdin: in.Stdin, Environment: in.Environment, Files: in.Files}, in.SessionID, err
}

// argsWithin refuses a tool's arguments over limit bytes.
func argsWithin(args json.RawMessage, limit int64) error {
	if int64(len(args)) > limit {
		return sandboxd.Errorf(sandboxd.CodeTooLarge, "httpapi.mcp", "the arguments are over the limit of %d bytes", limit)
	}
	return nil
}

// runPayment is the payment of a call of lang's tool for job: quoted at
// the price of job's environment, with the tool's declared extensions.
func (s *Server) runPayment(lang string, job sandboxd.Job, pay mcptools.Payment) (sandboxd.PaymentRequest, error) {
	p := pay.Request
	p.Extensions, p.Environment = s.toolExtensions(lang), job.Environment
	return p, pay.Err
}

// callInSession runs the program of lang's run tool in session id through
// the HTTP route's paid flow (callSession): the session is looked up before
// any payment (an unknown, ended or expired one is refused for nothing,
// unless the call is the retry of one already answered: endedCall), a
// session of another language is refused naming its tool, the program
// runs in the session's environment, and the call is paid at its price, by
// the wallet that opened the session only.
func (m mcpService) callInSession(ctx context.Context, lang, id string, req codeRequest, pay mcptools.Payment) (mcptools.Delivery, error) {
	s := m.s
	info, err := s.Sessions.Get(ctx, id)
	if err != nil {
		return m.endedCall(ctx, lang, id, req, pay, err)
	}
	if req.Environment != nil {
		return mcptools.Delivery{}, sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.validate",
			`field "environment" is not accepted with "session_id": the session keeps the environment it was opened in (%s); leave it out`,
			info.Environment)
	}
	if info.Language != lang {
		return mcptools.Delivery{}, sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.validate",
			"session %s… runs %s; call %s with it", shortSessionID(id), info.Language, mcptools.RunToolName(info.Language))
	}
	job, err := s.newSessionJob(info, req)
	if err != nil {
		return mcptools.Delivery{}, err
	}
	p, err := s.runPayment(lang, job, pay)
	if err != nil {
		return mcptools.Delivery{}, err
	}
	out, err := s.callSession(ctx, id, job, p)
	if err != nil {
		return failed(ctx, err)
	}
	answer := wire.NewSessionCodeResponse(job, out.Result)
	return mcptools.Delivery{Call: &answer, Files: out.Result.Files, Body: out.Answer.Body, Settlement: out.Settlement}, nil
}

// endedCall is answerEndedCall over MCP: lang's run tool's call in session
// id, whose session was not found (refused), answered from its stored
// answer when it is the retry of a call already answered, else refused.
func (m mcpService) endedCall(ctx context.Context, lang, id string, req codeRequest, pay mcptools.Payment,
	refused error) (mcptools.Delivery, error) {
	s := m.s
	if sandboxd.ErrorCode(refused) != sandboxd.CodeNotFound {
		return mcptools.Delivery{}, refused
	}
	job, err := s.newSessionJob(sandboxd.SessionInfo{}, req)
	if err != nil {
		return mcptools.Delivery{}, refused
	}
	p, err := s.runPayment(lang, job, pay)
	if err != nil || !s.probes(p) {
		return mcptools.Delivery{}, refused
	}
	p.Environment = "" // the session's, not known any more
	return failed(ctx, s.probeReplay(ctx, forAnswer(p, sandboxd.AnswerSessionCall, id, job), refused))
}

// Open opens a session through the HTTP route's paid flow (openSession),
// paid at the open price for mcptools.OpenToolResourceURL.
func (m mcpService) Open(ctx context.Context, args json.RawMessage, pay mcptools.Payment) (mcptools.Delivery, error) {
	s := m.s
	lang, env, err := s.openArgs(args)
	ingress.Release(ctx)
	if err != nil {
		return mcptools.Delivery{}, err
	}
	if pay.Err != nil {
		return mcptools.Delivery{}, pay.Err
	}
	p := pay.Request
	p.Extensions, p.Environment = s.openToolExtensions(), env
	out, err := s.openSession(ctx, lang, env, p)
	if err != nil && (out.Info.ID == "" || replayOf(err) != nil) {
		return failed(ctx, err)
	}
	// Pending (err set): the session is kept, and its id is the payer's.
	open := wire.NewSessionResponse(out.Info)
	return mcptools.Delivery{Open: &open, Body: out.Answer.Body, Settlement: out.Settlement}, err
}

// openArgs decodes open_session's arguments (none, or a language and an
// environment), as strictly as the body of POST /v1/sessions, and
// resolves them as it does.
func (s *Server) openArgs(args json.RawMessage) (lang, env string, err error) {
	if err := argsWithin(args, min(int64(openBodyLimit), s.MaxBodyBytes)); err != nil {
		return "", "", err
	}
	var in openRequest
	if trimmed := bytes.TrimSpace(args); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if err := decodeObject(trimmed, s.requestLimits(openShape), &in); err != nil {
			return "", "", err
		}
	}
	return s.resolve(in.Language, in.Environment)
}

// Close ends a session as DELETE /v1/sessions/{id} does: free, the id
// being the capability.
func (m mcpService) Close(ctx context.Context, args json.RawMessage) (string, error) {
	s := m.s
	var in closeToolInput
	err := argsWithin(args, openBodyLimit)
	if err == nil {
		err = decodeObject(args, s.requestLimits(closeShape), &in)
	}
	ingress.Release(ctx)
	if err == nil && (in.SessionID == nil || *in.SessionID == "") {
		err = sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.validate",
			`field "session_id" is missing or empty; send the session_id that open_session returned`)
	}
	if err == nil {
		err = s.Sessions.Close(ctx, *in.SessionID)
	}
	if err != nil {
		return "", err
	}
	return *in.SessionID, nil
}
