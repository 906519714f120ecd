package httpapi

import (
	"context"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"sandboxd"
)

// phasedRunner is a fake runner that records a take of 7 ms in the run's
// phases, as the runtime does.
type phasedRunner struct{ *fakeRunner }

func (r phasedRunner) Run(ctx context.Context, job sandboxd.Job) (sandboxd.Result, error) {
	sandboxd.PhasesFrom(ctx).Add(sandboxd.PhaseTake, 7*time.Millisecond)
	return r.fakeRunner.Run(ctx, job)
}

// TestCodeAnswersItsPhases: an answer of POST /v1/code lists its phases in
// Server-Timing (the runner's own among them, through the context), and
// every phase, the writing of the answer too, reaches ObservePhase.
func TestCodeAnswersItsPhases(t *testing.T) {
	srv := newTestServer(&fakeRunner{result: sandboxd.Result{Stdout: "42\n", Status: sandboxd.StatusOK}}, &fakeGate{})
	srv.Runner = phasedRunner{srv.Runner.(*fakeRunner)}
	var mu sync.Mutex
	var observed []sandboxd.Phase
	srv.ObservePhase = func(ph sandboxd.Phase, d time.Duration) {
		mu.Lock()
		observed = append(observed, ph)
		mu.Unlock()
	}
	rec := do(t, srv.Handler(), "POST", "/v1/code", `{"language":"python","code":"print(6*7)"}`)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	timing := rec.Header().Get("Server-Timing")
	entry := regexp.MustCompile(`^([a-z_]+);dur=\d+\.\d{3}$`)
	var listed []sandboxd.Phase
	for _, part := range regexp.MustCompile(`, `).Split(timing, -1) {
		m := entry.FindStringSubmatch(part)
		if m == nil {
			t.Fatalf("Server-Timing %q: entry %q is not name;dur=ms", timing, part)
		}
		listed = append(listed, sandboxd.Phase(m[1]))
	}
	want := []sandboxd.Phase{sandboxd.PhaseRead, sandboxd.PhasePayment, sandboxd.PhaseAdmit, sandboxd.PhaseReserve, sandboxd.PhaseTake, sandboxd.PhaseSettle}
	if !slices.Equal(listed, want) {
		t.Errorf("Server-Timing lists %v, want %v", listed, want)
	}
	if !regexp.MustCompile(`take;dur=7\.000`).MatchString(timing) {
		t.Errorf("Server-Timing %q lacks the runner's take of 7 ms", timing)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(observed, append(want, sandboxd.PhaseWrite)) {
		t.Errorf("observed %v, want %v and write", observed, want)
	}
}
