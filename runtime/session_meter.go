package runtime

import (
	"context"
	"time"
)

// Between calls a session's container is metered, and frozen once what a
// call left running (a thread, a child process) has used idleBudget of CPU
// in one sampling period: a session with nothing left running is never
// frozen, so its calls never wait for a thaw (an Engine API round trip of
// 12-40 ms, where a call takes 2), and one that keeps working between
// calls is frozen within about idleSampleFirst, then at once after each of
// its later calls. What a session may spend unpaid is so bounded by
// idleBudget plus one sampling period, once.
const (
	// idleBudget is the CPU time a session's container may use between two
	// calls before it is frozen: far above an idle interpreter's (none).
	idleBudget = 50 * time.Millisecond
	// idleSampleFirst is the first sampling period after a call; each next
	// one doubles, up to idleSampleMax: a one-shot stats read costs dockerd
	// about 3 ms of CPU, and most calls follow within seconds.
	idleSampleFirst = time.Second
	idleSampleMax   = 8 * time.Second
)

// afterCall starts the session's idle period, once a call (or the opening)
// has been answered: the container is frozen at once when its calls were
// seen to leave work running before, else metered (meter).
func (s *Session) afterCall() {
	s.frz.callOver()
	if s.restless.Load() {
		s.frz.freeze(s.freezeFailed)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.stopMeterLocked()
	s.meterStop = cancel
	s.mu.Unlock()
	go s.meter(ctx)
}

// stopMeterLocked stops the meter of the idle period under way, if any.
// s.mu is held.
func (s *Session) stopMeterLocked() {
	if s.meterStop != nil {
		s.meterStop()
		s.meterStop = nil
	}
}

// stopMeter stops the idle period's meter: a call begins.
func (s *Session) stopMeter() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopMeterLocked()
}

// meter reads the container's CPU time from the call's end on, and freezes
// it once it has used idleBudget, until ctx ends (the next call) or the
// session does. When its CPU time cannot be read the container is frozen:
// the budget is a promise.
func (s *Session) meter(ctx context.Context) {
	base, err := s.d.cpuTime(ctx, s.b.id)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("a session's CPU time could not be read; freezing it between calls", "err", err)
			s.frz.freeze(s.freezeFailed)
		}
		return
	}
	period := idleSampleFirst
	for {
		t := time.NewTimer(period)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.ended:
			t.Stop()
			return
		case <-t.C:
		}
		period = min(2*period, idleSampleMax)
		used, err := s.d.cpuTime(ctx, s.b.id)
		if err != nil {
			continue // the next read says
		}
		if used-base < idleBudget {
			// Per period, not since the call: the sandbox's own idle
			// upkeep (gVisor's) adds up over minutes.
			base = used
			continue
		}
		s.restless.Store(true)
		s.log.Info("a call left work running between calls; the session is frozen between its calls from now on",
			"cpu_ms", (used - base).Milliseconds())
		s.frz.freeze(s.freezeFailed)
		return
	}
}
