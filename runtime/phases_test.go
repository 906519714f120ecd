package runtime

import (
	"slices"
	"testing"
	"time"

	"sandboxd"
)

// TestRunPhases: a run's phases come from the hand-over, the ack and the
// end marker; a run killed before its end marker has no demux, one never
// acked no phase at all.
func TestRunPhases(t *testing.T) {
	handover := time.Now().Add(-50 * time.Millisecond)
	cases := []struct {
		name         string
		ackAt, endAt time.Time
		want         []sandboxd.Phase
	}{
		{"ended", handover.Add(2 * time.Millisecond), handover.Add(12 * time.Millisecond),
			[]sandboxd.Phase{sandboxd.PhaseHandover, sandboxd.PhaseProgram, sandboxd.PhaseDemux}},
		{"killed", handover.Add(2 * time.Millisecond), time.Time{},
			[]sandboxd.Phase{sandboxd.PhaseHandover, sandboxd.PhaseProgram}},
		{"never acked", time.Time{}, time.Time{}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := sandboxd.NewPhases(nil)
			o := &output{ackAt: tc.ackAt, endAt: tc.endAt}
			o.addPhases(p, handover)
			var got []sandboxd.Phase
			for _, s := range p.Spans() {
				got = append(got, s.Phase)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("phases %v, want %v", got, tc.want)
			}
			if len(got) == 3 {
				s := p.Spans()
				if s[0].Duration != 2*time.Millisecond || s[1].Duration != 10*time.Millisecond || s[2].Duration < 38*time.Millisecond {
					t.Errorf("durations %+v", s)
				}
			}
		})
	}
}
