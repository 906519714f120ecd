package httpapi

import (
	"context"
	"time"

	"sandboxd"
)

// The payment flows of sessions, beside execute's and sharing its paid
// half (deliver). Each refusal comes before anything is reserved, so that
// nobody pays for one:
//   - open: Sessions.Hold (429 when sessions are full, before any
//     payment) -> Gate.Check at the open price, the sessions URL as the
//     resource -> SessionHold.Claim (the payer's own cap, 429) -> Reserve
//     -> SessionHold.Start -> Settle, or Release when the start failed;
//   - call: the session found (404, before any payment; the handler) ->
//     Gate.Check at the environment's price, the session's code URL as
//     the resource -> Sessions.Turn (another wallet 403, busy 409) ->
//     Reserve -> SessionTurn.Run -> Settle, or Release when the service
//     failed to deliver. A call that ended the session (os._exit, the OOM
//     killer) was delivered: it is charged.
// One payment buys one answer: the ledger's reservation of the payment's
// nonce refuses it a second time.

// openedSession is an opened and settled session.
type openedSession struct {
	Info       sandboxd.SessionInfo
	Settlement *sandboxd.Settlement
}

// closeUnpaidTimeout bounds the closing of a session whose opening was not
// settled.
const closeUnpaidTimeout = 30 * time.Second

// openSession opens a session in env through the paid flow. The errors
// are the table's (sandboxd.Sessions, sandboxd.SessionHold) and the
// gate's.
func (s *Server) openSession(ctx context.Context, env string, pay sandboxd.PaymentRequest) (openedSession, error) {
	hold, err := s.Sessions.Hold(ctx, env)
	if err != nil {
		return openedSession{}, err
	}
	defer hold.Release()
	pay.Price = s.SessionSettings.OpenPrice
	auth, err := s.Gate.Check(ctx, pay)
	if err != nil {
		return openedSession{}, err
	}
	if err := hold.Claim(auth.Payer()); err != nil {
		return openedSession{}, err
	}
	var info sandboxd.SessionInfo
	settled, err := s.deliver(ctx, auth, func(ctx context.Context) (sandboxd.Result, error) {
		var err error
		info, err = hold.Start(ctx)
		return sandboxd.Result{Status: sandboxd.StatusOK}, err
	})
	if err != nil {
		if info.ID != "" {
			s.closeUnsettled(info.ID)
		}
		return openedSession{}, err
	}
	s.Log.Info("session opened", "session", shortID(info.ID), "environment", env, "owner", auth.Payer())
	return openedSession{Info: info, Settlement: settled}, nil
}

// closeUnsettled closes a session whose opening was not settled: its id is
// withheld with the answer, and a session nobody paid for must not hold
// room until it expires.
func (s *Server) closeUnsettled(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), closeUnpaidTimeout)
	defer cancel()
	if err := s.Sessions.Close(ctx, id); err != nil && sandboxd.ErrorCode(err) != sandboxd.CodeNotFound {
		s.Log.Warn("could not close a session whose opening was not settled", "session", shortID(id), "err", err)
	}
}

// sessionOutcome is a delivered and settled call in a session.
type sessionOutcome struct {
	Result     sandboxd.SessionResult
	Settlement *sandboxd.Settlement
}

// callSession runs job in session id through the paid flow; ctx may carry
// the request body's room (withBodyHold), given back once the turn is
// taken. The errors
// are the table's (sandboxd.Sessions, sandboxd.SessionTurn) and the
// gate's.
func (s *Server) callSession(ctx context.Context, id string, job sandboxd.Job, pay sandboxd.PaymentRequest) (sessionOutcome, error) {
	auth, err := s.Gate.Check(ctx, pay)
	if err != nil {
		return sessionOutcome{}, err
	}
	turn, err := s.Sessions.Turn(ctx, id, auth.Payer())
	if err != nil {
		return sessionOutcome{}, err
	}
	defer turn.Release()
	// The turn bounds what the job keeps from here on, as a sandbox slot
	// does for a run.
	releaseBody(ctx)
	var res sandboxd.SessionResult
	settled, err := s.deliver(ctx, auth, func(ctx context.Context) (sandboxd.Result, error) {
		var err error
		res, err = turn.Run(ctx, job)
		turn.Release() // the next call need not wait for this one's settlement
		return res.Result, err
	})
	if err != nil {
		return sessionOutcome{}, err
	}
	s.Log.Info("session call delivered", "session", shortID(id), "job", job.ID, "status", res.Status,
		"exit_code", res.ExitCode, "duration_ms", res.Duration.Milliseconds(), "session_ended", res.Ended)
	return sessionOutcome{Result: res, Settlement: settled}, nil
}
