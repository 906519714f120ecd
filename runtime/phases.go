package runtime

import (
	"time"

	"sandboxd"
)

// addPhases records a finished run's phases from the hand-over: to the
// runner's ack (sandboxd.PhaseHandover), from there to the end marker
// (PhaseProgram; to now, for a run without one: killed, or ended by its
// container's exit), and from the end marker to now, the result built
// (PhaseDemux). A run never acked records nothing: its program never ran.
// Called once reading has ended, when ackAt and endAt no longer change.
func (o *output) addPhases(p *sandboxd.Phases, handover time.Time) {
	if o.ackAt.IsZero() {
		return
	}
	p.Add(sandboxd.PhaseHandover, o.ackAt.Sub(handover))
	if o.endAt.IsZero() {
		p.Since(sandboxd.PhaseProgram, o.ackAt)
		return
	}
	p.Add(sandboxd.PhaseProgram, o.endAt.Sub(o.ackAt))
	p.Since(sandboxd.PhaseDemux, o.endAt)
}
