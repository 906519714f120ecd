package httpapi

import (
	"context"
	"sync"
	"time"

	"sandboxd"
)

// fakeReplay is a sandboxd.Replay answering ans and err.
type fakeReplay struct {
	by  string
	ans *sandboxd.StoredAnswer
	err error

	mu       sync.Mutex
	answered int
}

func (r *fakeReplay) Payer() string { return fakePayer }
func (r *fakeReplay) By() string    { return r.by }

func (r *fakeReplay) Reserve(context.Context) (sandboxd.Charge, error) {
	return nil, sandboxd.Errorf(sandboxd.CodeInternal, "fake.reserve", "a replay is never reserved")
}

// Answer records the replay phase, as the keeper's does.
func (r *fakeReplay) Answer(ctx context.Context) (*sandboxd.StoredAnswer, error) {
	sandboxd.PhasesFrom(ctx).Add(sandboxd.PhaseReplay, time.Millisecond)
	r.mu.Lock()
	r.answered++
	r.mu.Unlock()
	return r.ans, r.err
}

// times is how many times Answer was called.
func (r *fakeReplay) times() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.answered
}

// How a replayGate hands its Replay over.
const (
	// replayFromCheck: Check returns the Replay as its Authorization.
	replayFromCheck = "check"
	// replayInCheckError: Check returns an error carrying the Replay.
	replayInCheckError = "check-error"
	// replayInReserve: Reserve loses a race and returns an error carrying
	// the Replay.
	replayInReserve = "reserve"
	// replayOnProbe: only a ReplayOnly Check finds it; the others pass to
	// the fakeGate.
	replayOnProbe = "probe"
)

// replayGate is a fakeGate that recognises every paid request as a retry
// of one already answered, handing r over as how says.
type replayGate struct {
	*fakeGate
	r   *fakeReplay
	how string
}

func (g *replayGate) Check(ctx context.Context, req sandboxd.PaymentRequest) (sandboxd.Authorization, error) {
	if g.how == replayOnProbe && !req.ReplayOnly {
		return g.fakeGate.Check(ctx, req)
	}
	g.mu.Lock()
	g.checked++
	g.requests = append(g.requests, req)
	g.mu.Unlock()
	switch g.how {
	case replayInCheckError:
		return nil, &sandboxd.Error{Code: sandboxd.CodeConflict, Op: "fake.check", Replay: g.r}
	case replayInReserve:
		return racedAuth{g}, nil
	}
	return g.r, nil
}

// racedAuth is an authorization whose Reserve lost the race to the first
// request with the same payment.
type racedAuth struct{ g *replayGate }

func (a racedAuth) Payer() string { return fakePayer }

func (a racedAuth) Reserve(context.Context) (sandboxd.Charge, error) {
	return nil, &sandboxd.Error{Code: sandboxd.CodeConflict, Op: "fake.reserve", Replay: a.g.r}
}

// lastRequest is the last payment request the gate saw.
func (g *fakeGate) lastRequest() sandboxd.PaymentRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.requests) == 0 {
		return sandboxd.PaymentRequest{}
	}
	return g.requests[len(g.requests)-1]
}

// storedRun is a stored answer of a run, its bytes as written.
func storedRun() *sandboxd.StoredAnswer {
	return &sandboxd.StoredAnswer{Kind: sandboxd.AnswerRun, Status: 200, Settlement: fakeSettlement(),
		Body: []byte(`{"lang":"python","stdout":"first <run>\n","stderr":"","exit_code":0,"status":"ok","timed_out":false,` +
			`"oom_killed":false,"truncated":false,"duration_ms":5,"cpu_ms":1,"max_rss_kb":100,"environment":"python",` +
			`"files":[],"files_truncated":false}` + "\n")}
}
