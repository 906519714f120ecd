package httpapi

import (
	"context"
	"net/http"
	"time"

	"sandboxd"
	"sandboxd/httpapi/ingress"
	"sandboxd/httpapi/wire"
)

// The payment flows of sessions, beside execute's and sharing its paid
// half (deliver). Each refusal comes before anything is reserved, so that
// nobody pays for one:
//   - open: Sessions.Room (429 when sessions are full, before any payment;
//     nothing held) -> Gate.Check at the open price, the sessions URL as
//     the resource -> Sessions.Hold (room held only for a payment that
//     checked out) -> SessionHold.Claim (the payer's own cap, or a free
//     client's, 429) -> Reserve -> SessionHold.Start -> Settle, or Release
//     when the start failed. An opening whose settlement failed closes its
//     session; one whose settlement is pending keeps it (202 with its id):
//     the payment is likely collected, and it is the payer's;
//   - call: the session found (404, before any payment; the handler) ->
//     Gate.Check at the environment's price, a fixed template of the
//     session's code URL as the resource (an id is a capability: it never
//     reaches a facilitator) -> Sessions.Turn (another wallet 403, busy
//     409) -> Reserve -> SessionTurn.Run -> Settle, or Release when the
//     service failed to deliver (a DELETE or a shutdown that cut the call
//     off included). The turn is held until the settlement is known: a
//     call whose settlement was refused or is pending ends its session, so
//     no later call reads what an unpaid one left. A call that ended the
//     session (os._exit, the OOM killer) was delivered: it is charged.
// One payment buys one answer: the ledger's reservation of the payment's
// nonce refuses it a second time. Its retry with the same request is
// answered from the stored answer (replay.go), before the room, the hold or
// the turn: an opening refused for room and a call to an ended session are
// probed for one first, so that a retry never meets a refusal the first
// request did not.

// openedSession is an opened session, its answer as rendered before the
// settlement (a wire.SessionResponse, 201) and its settlement.
type openedSession struct {
	Info       sandboxd.SessionInfo
	Answer     rendered
	Settlement *sandboxd.Settlement
}

// closeUnpaidTimeout bounds the closing of a session whose opening or call
// was not settled.
const closeUnpaidTimeout = 30 * time.Second

// openSession opens a session of lang in env through the paid flow; ctx may carry
// the client's address (withClient) for the free per-client cap. The
// errors are the table's (sandboxd.Sessions, sandboxd.SessionHold) and the
// gate's. An opening whose settlement is pending answers CodePending with
// the session kept: the result's Info then names it. A retry of an
// opening already answered is an error carrying its Replay (replayOf),
// even when sessions are full (the gate is then asked for a replay only).
func (s *Server) openSession(ctx context.Context, lang, env string, pay sandboxd.PaymentRequest) (openedSession, error) {
	pay.Price = s.SessionSettings.OpenPrice
	pay = forAnswer(pay, sandboxd.AnswerSessionOpen, "", sandboxd.Job{Language: lang, Environment: env})
	if err := s.Sessions.Room(env); err != nil {
		return openedSession{}, s.probeReplay(ctx, pay, err)
	}
	auth, err := checkPayment(ctx, s.Gate, pay)
	if err != nil {
		return openedSession{}, err
	}
	hold, err := s.Sessions.Hold(ctx, env, lang)
	if err != nil {
		return openedSession{}, err
	}
	defer hold.Release()
	if err := hold.Claim(ctx, auth.Payer(), ingress.ClientFrom(ctx)); err != nil {
		return openedSession{}, err
	}
	var info sandboxd.SessionInfo
	settled, answer, err := s.deliver(ctx, auth, func(ctx context.Context) (sandboxd.Result, error) {
		var err error
		info, err = hold.Start(ctx)
		return sandboxd.Result{Status: sandboxd.StatusOK}, err
	}, func(sandboxd.Result) (int, any) { return http.StatusCreated, wire.NewSessionResponse(info) })
	if err != nil && info.ID != "" && sandboxd.ErrorCode(err) == sandboxd.CodePending {
		s.Log.Warn("session opened; its settlement is pending", "session", shortSessionID(info.ID), "environment", env, "owner", auth.Payer())
		return openedSession{Info: info}, err
	}
	if err != nil {
		if info.ID != "" {
			s.closeUnsettled(info.ID)
		}
		return openedSession{}, err
	}
	s.Log.Info("session opened", "session", shortSessionID(info.ID), "environment", env, "language", lang, "owner", auth.Payer())
	return openedSession{Info: info, Answer: answer, Settlement: settled}, nil
}

// closeUnsettled closes a session whose opening or call was not settled:
// an opening's id is withheld with the answer, a session nobody paid for
// must not hold room until it expires, and no later call may read what an
// unpaid call left in it.
func (s *Server) closeUnsettled(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), closeUnpaidTimeout)
	defer cancel()
	if err := s.Sessions.Close(ctx, id); err != nil && sandboxd.ErrorCode(err) != sandboxd.CodeNotFound {
		s.Log.Warn("could not close a session whose opening was not settled", "session", shortSessionID(id), "err", err)
	}
}

// sessionOutcome is a delivered and settled call in a session, with its
// answer as rendered before the settlement (a wire.SessionCodeResponse).
type sessionOutcome struct {
	Result     sandboxd.SessionResult
	Answer     rendered
	Settlement *sandboxd.Settlement
}

// callSession runs job in session id through the paid flow; ctx may carry
// the request body's room (ingress.WithHold), given back once the turn is
// taken. The errors are the table's (sandboxd.Sessions,
// sandboxd.SessionTurn) and the gate's; a retry of a call already
// answered is an error carrying its Replay (replayOf), before the turn: the
// session never sees a call twice.
func (s *Server) callSession(ctx context.Context, id string, job sandboxd.Job, pay sandboxd.PaymentRequest) (sessionOutcome, error) {
	auth, err := checkPayment(ctx, s.Gate, forAnswer(pay, sandboxd.AnswerSessionCall, id, job))
	if err != nil {
		return sessionOutcome{}, err
	}
	turn, err := s.Sessions.Turn(ctx, id, auth.Payer())
	if err != nil {
		return sessionOutcome{}, err
	}
	// Released only once the settlement is known (the flows' comment).
	defer turn.Release()
	// The turn bounds what the job keeps from here on, as a sandbox slot
	// does for a run.
	ingress.Release(ctx)
	var res sandboxd.SessionResult
	delivered := false
	settled, answer, err := s.deliver(ctx, auth, func(ctx context.Context) (sandboxd.Result, error) {
		var err error
		res, err = turn.Run(ctx, job)
		delivered = err == nil
		return res.Result, err
	}, func(sandboxd.Result) (int, any) { return http.StatusOK, wire.NewSessionCodeResponse(job, res) })
	if err != nil {
		if delivered && !res.Ended {
			s.Log.Warn("session call not settled; ending the session", "session", shortSessionID(id), "job", job.ID,
				"code", sandboxd.ErrorCode(err))
			s.closeUnsettled(id)
		}
		return sessionOutcome{}, err
	}
	s.Log.Info("session call delivered", "session", shortSessionID(id), "job", job.ID, "status", res.Status,
		"exit_code", res.ExitCode, "duration_ms", res.Duration.Milliseconds(), "session_ended", res.Ended)
	return sessionOutcome{Result: res, Answer: answer, Settlement: settled}, nil
}
