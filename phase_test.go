package sandboxd

import (
	"context"
	"testing"
	"time"
)

// TestPhasesRecordAndObserve: a recorder carried in a context keeps the
// phases in order and hands each to its observer; a context without one
// gives a nil recorder that records nothing.
func TestPhasesRecordAndObserve(t *testing.T) {
	var seen []Phase
	p := NewPhases(func(ph Phase, d time.Duration) { seen = append(seen, ph) })
	ctx := WithPhases(context.Background(), p)
	PhasesFrom(ctx).Add(PhaseAdmit, 2*time.Millisecond)
	next := PhasesFrom(ctx).Since(PhaseTake, time.Now().Add(-time.Millisecond))
	if time.Since(next) > time.Second {
		t.Errorf("Since returned %v, not now", next)
	}
	spans := p.Spans()
	if len(spans) != 2 || spans[0] != (PhaseSpan{PhaseAdmit, 2 * time.Millisecond}) ||
		spans[1].Phase != PhaseTake || spans[1].Duration < time.Millisecond {
		t.Errorf("spans = %+v", spans)
	}
	if len(seen) != 2 || seen[0] != PhaseAdmit || seen[1] != PhaseTake {
		t.Errorf("observed %v", seen)
	}
	none := PhasesFrom(context.Background())
	if none != nil {
		t.Fatalf("a bare context carries %v", none)
	}
	none.Add(PhaseWrite, time.Second) // must not panic
	if none.Spans() != nil {
		t.Error("a nil recorder has spans")
	}
}
