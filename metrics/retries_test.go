package metrics

import (
	"errors"
	"testing"
	"time"

	"sandboxd/payments/retries"
)

// TestRetrySeries: the keeper's observer counts lookups by found, retries
// by proof and outcome (every pair shown from the start) with their
// waits, answers kept or too large, and what the sweeps let go; the bytes
// gauge shows the last good sweep's sum, a failed sweep counting apart and
// leaving it.
func TestRetrySeries(t *testing.T) {
	m := New(nil)
	o := m.Retries()
	o.Lookup(true, time.Millisecond)
	o.Lookup(false, time.Millisecond)
	o.Lookup(false, time.Millisecond)
	o.Replay("payment", retries.OutcomeAnswered, 20*time.Millisecond)
	o.Replay("id", retries.OutcomeConflict, 0)
	o.Kept(true)
	o.Kept(true)
	o.Kept(false)
	o.Swept(retries.SweepReport{Expired: 3, Evicted: 2, EvictedBytes: 4096, Bytes: 1 << 20}, time.Millisecond, nil)
	o.Swept(retries.SweepReport{Expired: 1, Bytes: 512 << 10}, time.Millisecond, nil)
	o.Swept(retries.SweepReport{}, time.Millisecond, errors.New("ledger down"))
	fams := scrape(t, m)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"sandboxd_answer_lookups_total", map[string]string{"found": "yes"}, 1},
		{"sandboxd_answer_lookups_total", map[string]string{"found": "no"}, 2},
		{"sandboxd_answer_lookup_seconds", nil, 3},
		{"sandboxd_replays_total", map[string]string{"by": "payment", "outcome": "answered"}, 1},
		{"sandboxd_replays_total", map[string]string{"by": "id", "outcome": "conflict"}, 1},
		{"sandboxd_replays_total", map[string]string{"by": "id", "outcome": "gone"}, 0},
		{"sandboxd_replays_total", map[string]string{"by": "payment", "outcome": "busy"}, 0},
		{"sandboxd_replay_wait_seconds", nil, 2},
		{"sandboxd_answers_kept_total", map[string]string{"outcome": "kept"}, 2},
		{"sandboxd_answers_kept_total", map[string]string{"outcome": "too_large"}, 1},
		{"sandboxd_answers_evicted_total", map[string]string{"why": "expired"}, 4},
		{"sandboxd_answers_evicted_total", map[string]string{"why": "budget"}, 2},
		{"sandboxd_answer_sweeps_total", map[string]string{"outcome": "ok"}, 2},
		{"sandboxd_answer_sweeps_total", map[string]string{"outcome": "failed"}, 1},
		{"sandboxd_answers_bytes", nil, 512 << 10},
	} {
		if v := value(fams, c.name, c.labels); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
}
