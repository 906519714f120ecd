package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"sandboxd"
	"sandboxd/httpapi/ingress"
	"sandboxd/httpapi/wire"
	"sandboxd/x402"
)

// Retries of paid requests (docs/design/retries.md): a request whose
// payment (or payment id, with a new payment of the same payer) was
// already answered for the same request is answered from the stored
// answer, before any slot, room or turn, and its own payment is neither
// reserved nor settled. The gate recognises it (a Replay from Check, or an
// error carrying one from Check or Reserve); the flows return it as an
// error carrying the Replay, and the handlers answer it here (HTTP) or,
// over MCP, mcptools (its stored answer waited for by replayed).

// replayOf returns the Replay err carries (sandboxd.Error.Replay), or nil.
func replayOf(err error) sandboxd.Replay {
	var e *sandboxd.Error
	if errors.As(err, &e) {
		return e.Replay
	}
	return nil
}

// replayError is the flow's error for the Replay r: CodeConflict carrying
// r, which the handler answers (Replay.Answer) instead.
func replayError(r sandboxd.Replay) error {
	return &sandboxd.Error{Code: sandboxd.CodeConflict, Op: "httpapi.replay", Replay: r,
		Message: "this request was already answered for this payment"}
}

// checkPayment is gate.Check, with a Replay it returns (a retry of a
// request already answered) turned into the flow's error (replayError), so
// that no flow reserves it or takes a slot for it.
func checkPayment(ctx context.Context, gate sandboxd.PaymentGate, pay sandboxd.PaymentRequest) (sandboxd.Authorization, error) {
	auth, err := gate.Check(ctx, pay)
	if r, ok := auth.(sandboxd.Replay); ok && err == nil {
		return nil, replayError(r)
	}
	return auth, err
}

// probes reports whether a request refused before its payment was looked
// at is probed for a stored answer (probeReplay): retries are on and it
// carries a payment (v2 or v1).
func (s *Server) probes(pay sandboxd.PaymentRequest) bool {
	return s.Retries && (pay.Signature != "" || pay.XPayment != "")
}

// probeReplay answers a paid request refused before its payment was looked
// at (refused: a call to an ended session, an opening refused for room):
// when retries are on (Server.Retries; off, nothing is kept to find) and
// it carries a payment, the gate is asked for a stored answer only
// (PaymentRequest.ReplayOnly: no remote check, nothing reserved), and a
// Replay found is returned as the flow's error (replayError); otherwise,
// or when the probe fails, refused is. pay must name its answer
// (forAnswer).
func (s *Server) probeReplay(ctx context.Context, pay sandboxd.PaymentRequest, refused error) error {
	if !s.probes(pay) {
		return refused
	}
	pay.ReplayOnly = true
	auth, err := s.Gate.Check(ctx, pay)
	if r := replayOf(err); r != nil {
		return err
	}
	if r, ok := auth.(sandboxd.Replay); ok && err == nil {
		return replayError(r)
	}
	if err != nil {
		s.Log.Debug("replay probe refused", "kind", pay.Kind, "code", sandboxd.ErrorCode(err), "err", err)
	}
	return refused
}

// retryCode is the code a retry's log line shows: err's, none when it was
// answered (ErrorCode(nil) would say CodeInternal).
func retryCode(err error) sandboxd.Code {
	if err == nil {
		return ""
	}
	return sandboxd.ErrorCode(err)
}

// answerReplay answers the retry r over HTTP: it waits for the stored
// answer (Replay.Answer, bounded by the keeper's wait) and writes it as it
// was first written, its status and bytes, with its original settlement
// report, Cache-Control: no-store and Idempotent-Replayed; its own payment
// is neither reserved nor settled. The stored answer's refusals are
// answered as errors (writeError): 410 (not kept, with the original
// report), 202 (its settlement pending; an opening's names its session),
// 409 (not delivered, or still running when the wait ran out), 429, 503.
// ctx may carry the request's room in the body budget: it is given back
// before the wait.
func (s *Server) answerReplay(ctx context.Context, w http.ResponseWriter, r *http.Request, rep sandboxd.Replay) {
	ingress.Release(ctx)
	phases := sandboxd.PhasesFrom(ctx)
	if phases == nil {
		ctx, phases = s.withPhases(ctx)
	}
	ans, err := rep.Answer(ctx)
	h := w.Header()
	if err == nil && (ans == nil || ans.Status == 0 || ans.Body == nil) {
		err = sandboxd.Errorf(sandboxd.CodeInternal, "httpapi.replay", "a stored answer without its status or bytes")
	}
	if code := sandboxd.ErrorCode(err); err == nil || code == sandboxd.CodePending || code == sandboxd.CodeGone {
		h.Set(x402.HeaderIdempotentReplayed, "true")
	}
	s.Log.Info("paid request retried", "path", logPath(r.URL.Path), "by", rep.By(), "payer", rep.Payer(),
		"code", retryCode(err), "answered", err == nil)
	if err != nil {
		if open := wire.PendingOpen(ans, err); open != nil {
			addServerTiming(h, phases)
			s.writePendingSession(w, r, err, *open)
			return
		}
		addServerTiming(h, phases)
		s.writeError(w, r, err)
		return
	}
	addSettlement(h, ans.Settlement)
	noStore(h)
	began := time.Now()
	addServerTiming(h, phases)
	writeBody(w, ans.Status, ans.Body)
	phases.Since(sandboxd.PhaseWrite, began)
}
