package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// benchLanguage is one language of the languages phase: its hello world,
// and a session's step with the set-up before it and what the step must
// print or answer.
type benchLanguage struct {
	name, hello string
	// setup runs once in a fresh session; step is then called again and
	// again and answers its count in result (want "result") or on stdout.
	setup, step string
	onStdout    bool
}

// benchLanguages are the languages measured, Python first: the others are
// compared with it.
var benchLanguages = []benchLanguage{
	{name: "python", hello: hello, setup: "x = 0", step: sessionStep},
	{name: "javascript", hello: "console.log('hello')", setup: "let x = 0", step: "x += 1; x"},
	{name: "typescript", hello: "const s: string = 'hello'; console.log(s)", setup: "let x: number = 0", step: "x += 1; x"},
	{name: "bash", hello: "echo hello", setup: "x=0", step: "x=$((x+1)); echo $x", onStdout: true},
}

// languageFigures is what the languages phase measured of one language.
type languageFigures struct {
	sparse  latencies
	loaded  phase
	session latencies
}

// languagesReport is the languages phase: each language's figures, in one
// service, and the load's rate.
type languagesReport struct {
	ceiling, loadRate float64
	figures           map[string]*languageFigures
	// removals is the wait for the load phases' removals before the
	// session steps.
	removals settled
}

// measureLanguages runs the languages phase: sparse hello worlds of every
// language in turns, then each at 40 % of the engine ceiling (Poisson),
// then session steps of every language in turns. ceiling is the engine
// ceiling measured earlier in the run, 0 to measure it here.
func measureLanguages(ctx context.Context, o *options, ceiling float64) (languagesReport, error) {
	r := languagesReport{figures: map[string]*languageFigures{}}
	var err error
	if r.ceiling, err = ceilingOr(ctx, o, "languages", ceiling); err != nil {
		return r, err
	}
	r.loadRate = 0.4 * r.ceiling
	s, err := startService(ctx, o, []string{"SANDBOX_ENVIRONMENTS_DATA_ENABLED=false",
		"SANDBOX_ENVIRONMENTS_NODE_IMAGE=" + o.nodeImage})
	if err != nil {
		return r, err
	}
	defer s.stop()
	for _, l := range benchLanguages {
		r.figures[l.name] = &languageFigures{}
		for range 3 { // connection set-up and the pool's first fill
			if _, err := s.callIn(l); err != nil {
				return r, fmt.Errorf("%s warm-up: %w", l.name, err)
			}
		}
	}
	progress("languages: %d hello worlds of each of %d languages in turns, %v apart", o.sparse, len(benchLanguages), o.gap)
	for i := 0; i < o.sparse && ctx.Err() == nil; i++ {
		for _, l := range benchLanguages {
			time.Sleep(o.gap)
			d, err := s.callIn(l)
			if err != nil {
				return r, fmt.Errorf("%s sparse call %d: %w", l.name, i+1, err)
			}
			r.figures[l.name].sparse = append(r.figures[l.name].sparse, d.wall)
		}
	}
	for _, l := range benchLanguages {
		progress("languages: %s hello worlds arriving at %.1f/s (40 %% of the ceiling), %d arrivals", l.name, r.loadRate, o.arrivals/2)
		time.Sleep(2 * time.Second)
		p := poissonOf(ctx, r.loadRate, 0, o.arrivals/2, func() (sample, error) { return s.callIn(l) })
		p.load = loadAverage()
		r.figures[l.name].loaded = p
	}
	// The load phases' killed containers are removed in the background:
	// the session steps wait for the last of them.
	if r.removals, err = settleRemovals(ctx, s.Instance); err != nil {
		return r, err
	}
	progress("languages: %d containers of the load phases were left to remove, removed in %v", r.removals.left,
		r.removals.took.Round(time.Millisecond))
	return r, r.sessionSteps(ctx, s, o)
}

// sessionSteps opens a session of each language and calls its step in
// turns, gap before each.
func (r *languagesReport) sessionSteps(ctx context.Context, s *service, o *options) error {
	progress("languages: %d session steps of each language in turns, %v apart", o.sparse, o.gap)
	ids := map[string]string{}
	defer func() {
		for _, id := range ids {
			s.closeSession(id)
		}
	}()
	for _, l := range benchLanguages {
		status, raw, _, err := s.send(http.MethodPost, "/v1/sessions", map[string]string{"language": l.name})
		var open struct {
			SessionID string `json:"session_id"`
		}
		if err != nil || status != http.StatusCreated || json.Unmarshal(raw, &open) != nil {
			return fmt.Errorf("%s session: status %d %v: %.200s", l.name, status, err, raw)
		}
		ids[l.name] = open.SessionID
		if _, _, err := s.callAt(sessionPath(open.SessionID), map[string]string{"code": l.setup}); err != nil {
			return fmt.Errorf("%s session set-up: %w", l.name, err)
		}
	}
	for i := 1; i <= o.sparse && ctx.Err() == nil; i++ {
		for _, l := range benchLanguages {
			time.Sleep(o.gap)
			a, d, err := s.callAt(sessionPath(ids[l.name]), map[string]string{"code": l.step})
			got, want := "", fmt.Sprint(i)
			if a.Result != nil {
				got = *a.Result
			}
			if l.onStdout {
				got = strings.TrimSpace(a.Stdout)
			}
			if err == nil && got != want {
				err = fmt.Errorf("answered %q, want %q", got, want)
			}
			if err != nil {
				return fmt.Errorf("%s session step %d: %w", l.name, i, err)
			}
			r.figures[l.name].session = append(r.figures[l.name].session, d)
		}
	}
	return nil
}

// callIn posts l's hello world and checks its answer.
func (s *service) callIn(l benchLanguage) (sample, error) {
	a, sm, err := s.post(l.name, l.hello)
	if err == nil && (a.Status != "ok" || a.Stdout != "hello\n") {
		err = fmt.Errorf("wrong answer: status %q stdout %q stderr %.200q", a.Status, a.Stdout, a.Stderr)
	}
	return sm, err
}
