package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"

	"sandboxd"
	"sandboxd/httpapi/ingress"
	"sandboxd/httpapi/wire"
)

// settledRun is a delivered and settled run: the program's result, its
// answer as rendered before the settlement (a wire.CodeResponse), and the
// settlement's report (nil when nothing was charged).
type settledRun struct {
	Result     sandboxd.Result
	Answer     rendered
	Settlement *sandboxd.Settlement
}

// execute runs one validated job through the payment flow, the one flow of
// every paid entry point (POST /v1/code, the MCP tool), in the order
// ARCHITECTURE.md ("One request") describes: Gate.Check, Admitter.Admit,
// Authorization.Reserve, Runner.Run, then Charge.Settle or Charge.Release.
// It keeps two promises: nobody pays for a refusal (nothing is reserved
// before the slot is held), and nobody gets a run without paying for it
// (from Reserve on, the run and its settlement are detached from ctx; the
// run is bounded by the runner's own timeout and RunLimit).
//
// Only the service's own failure to deliver (a runner error) releases the
// reservation. The errors are the gate's and the runner's (see
// sandboxd.PaymentGate, sandboxd.Charge, sandboxd.Runner), the admitter's
// CodeBusy, or ctx's error when the caller left before the reservation. A
// retry of a request already answered is an error carrying its Replay
// (replayOf), before any slot is taken, or after it when Reserve lost a
// race to the first.
func (s *Server) execute(ctx context.Context, job sandboxd.Job, pay sandboxd.PaymentRequest) (settledRun, error) {
	if err := s.refuseBuilding(ctx, job.Environment); err != nil {
		return settledRun{}, err
	}
	pay = forAnswer(pay, sandboxd.AnswerRun, "", job)
	phases := sandboxd.PhasesFrom(ctx)
	began := time.Now()
	auth, err := checkPayment(ctx, s.Gate, pay)
	began = phases.Since(sandboxd.PhasePayment, began)
	if err != nil {
		return settledRun{}, err
	}
	release, err := s.Admitter.Admit(ctx)
	phases.Since(sandboxd.PhaseAdmit, began)
	if err != nil {
		return settledRun{}, err
	}
	// Until now the job waited holding its body's room in the body budget
	// (ingress/body.go), so waiting jobs' files stay within it; a run admitted is
	// bounded by the admission of runs.
	ingress.Release(ctx)
	var gone <-chan struct{}
	defer func() { releaseWhenGone(gone, release) }()
	var res sandboxd.Result
	settled, answer, err := s.deliver(ctx, auth, func(ctx context.Context) (sandboxd.Result, error) {
		var err error
		res, err = s.Runner.Run(ctx, job)
		gone = res.Gone
		return res, err
	}, func(res sandboxd.Result) (int, any) { return http.StatusOK, wire.NewCodeResponse(job, res) })
	if err != nil {
		return settledRun{}, err
	}
	s.Log.Info("run delivered", "job", job.ID, "status", res.Status, "exit_code", res.ExitCode,
		"duration_ms", res.Duration.Milliseconds())
	return settledRun{Result: res, Answer: answer, Settlement: settled}, nil
}

// deliver is the paid half of every flow (a run, a session's opening or
// call), once what the payment buys is held (a sandbox slot, a session's
// room or turn): it reserves auth's payment, runs run, renders the answer
// (view: its status and value), then settles with that answer (the
// settlement keeps it for a replay) and returns it, to be written byte for
// byte; or it releases the payment when run failed or the answer did not
// render (the service's own failure: nobody pays for it). From the
// reservation on, the caller's hang-up changes nothing: run, the rendering
// and the settlement are detached from ctx, run bounded by RunLimit, so a
// paid answer is kept whether anyone reads it. The errors are Reserve's
// (a lost race carries its Replay), run's, the rendering's CodeInternal
// and Settle's.
func (s *Server) deliver(ctx context.Context, auth sandboxd.Authorization, run func(context.Context) (sandboxd.Result, error),
	view func(sandboxd.Result) (int, any)) (*sandboxd.Settlement, rendered, error) {
	ctx = context.WithoutCancel(ctx)
	began := time.Now()
	charge, err := auth.Reserve(ctx)
	sandboxd.PhasesFrom(ctx).Since(sandboxd.PhaseReserve, began)
	if err != nil {
		return nil, rendered{}, err
	}
	runCtx, cancel := s.runContext(ctx)
	res, err := run(runCtx)
	cancel()
	var answer rendered
	if err == nil {
		answer, err = render(view(res))
	}
	if err != nil {
		charge.Release(ctx)
		return nil, rendered{}, err
	}
	began = time.Now()
	defer sandboxd.PhasesFrom(ctx).Since(sandboxd.PhaseSettle, began)
	settled, err := charge.Settle(ctx, answer.delivered(res))
	if err != nil {
		return nil, rendered{}, err
	}
	return settled, answer, nil
}

// releaseWhenGone gives the sandbox slot back once the run's sandbox holds
// nothing (sandboxd.Result.Gone; at once when gone is nil): the answer does
// not wait for a killed container to stop, but the slot does, so the
// sandboxes that run at once, and their memory, stay bounded by the
// admission limit. The runner bounds the kill and the removal itself.
func releaseWhenGone(gone <-chan struct{}, release func()) {
	if gone == nil {
		release()
		return
	}
	go func() {
		<-gone
		release()
	}()
}

// runContext bounds a detached run by RunLimit, when set.
func (s *Server) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.RunLimit > 0 {
		return context.WithTimeout(ctx, s.RunLimit)
	}
	return context.WithCancel(ctx)
}

// newJobID returns a short random identifier for logs and labels.
func newJobID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
