package sandboxd

import (
	"context"
	"sync"
	"time"
)

// Phase names one step of an answer, for the phase histogram
// (sandboxd_phase_seconds) and the answer's Server-Timing header.
type Phase string

// The phases of one answer, in the order they happen. A run spends its
// container's acquisition in exactly one of PhaseTake, PhaseTakeWait and
// PhaseStart (a pool that had none for it counts as a start).
const (
	// PhaseRead is reading and validating the request's body.
	PhaseRead Phase = "read"
	// PhasePayment is the payment gate's check (nothing in free mode).
	PhasePayment Phase = "payment"
	// PhaseReplay is answering a retry from a stored answer: the wait for
	// a first request still running and the read of its answer.
	PhaseReplay Phase = "replay"
	// PhaseAdmit is the wait for a sandbox slot.
	PhaseAdmit Phase = "admit"
	// PhaseReserve is the payment's reservation in the ledger (nothing in
	// free mode); a channel's deposit is collected here, before the run.
	PhaseReserve Phase = "reserve"
	// PhaseTake is taking an idle warm container from the pool.
	PhaseTake Phase = "take"
	// PhaseTakeWait is waiting for a warm container whose start was
	// already in flight when the run came.
	PhaseTakeWait Phase = "take_wait"
	// PhaseStart is starting a container of the run's own (no pool, or
	// the pool had none idle or starting for it), any wait for the pool
	// included.
	PhaseStart Phase = "start"
	// PhaseHandover is from sending the program to the runner's ack.
	PhaseHandover Phase = "handover"
	// PhaseProgram is from the ack to the runner's end marker (or to the
	// end of reading, for a run killed or ended otherwise).
	PhaseProgram Phase = "program"
	// PhaseDemux is from the end marker to the result built: the files out
	// parsed and the output decoded.
	PhaseDemux Phase = "demux"
	// PhaseSettle is collecting the payment (nothing in free mode).
	PhaseSettle Phase = "settle"
	// PhaseWrite is encoding and writing the answer.
	PhaseWrite Phase = "write"
)

// PhaseSpan is the time one answer spent in one phase.
type PhaseSpan struct {
	Phase    Phase
	Duration time.Duration
}

// Phases records the phases of one answer. The handler that answers makes
// one and carries it in the request's context (WithPhases); each package
// on the path adds the phases it owns (PhasesFrom(ctx).Add). A nil *Phases
// records nothing, so code on a path without one need not check. It is safe
// for concurrent use.
type Phases struct {
	observe func(Phase, time.Duration)
	mu      sync.Mutex
	spans   []PhaseSpan
}

// NewPhases returns an empty recorder that also hands every phase, as it
// is added, to observe (nil: none), such as the metrics' histogram.
func NewPhases(observe func(Phase, time.Duration)) *Phases {
	return &Phases{observe: observe}
}

// Add records that the answer spent d in ph.
func (p *Phases) Add(ph Phase, d time.Duration) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.spans = append(p.spans, PhaseSpan{Phase: ph, Duration: d})
	p.mu.Unlock()
	if p.observe != nil {
		p.observe(ph, d)
	}
}

// Since records the time from began to now in ph and returns now, the
// beginning of the next phase.
func (p *Phases) Since(ph Phase, began time.Time) time.Time {
	now := time.Now()
	p.Add(ph, now.Sub(began))
	return now
}

// Spans returns the phases recorded so far, in the order they were added.
func (p *Phases) Spans() []PhaseSpan {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]PhaseSpan(nil), p.spans...)
}

// phasesKey is the context key of an answer's Phases.
type phasesKey struct{}

// WithPhases returns ctx carrying p.
func WithPhases(ctx context.Context, p *Phases) context.Context {
	return context.WithValue(ctx, phasesKey{}, p)
}

// PhasesFrom returns the Phases ctx carries, or nil (which records nothing).
func PhasesFrom(ctx context.Context) *Phases {
	p, _ := ctx.Value(phasesKey{}).(*Phases)
	return p
}
