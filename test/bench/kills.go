package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sandboxd/internal/servicetest"
)

// killTimeout is the runtime.timeout of the kills phase: config.yaml's.
const killTimeout = 5 * time.Second

// killCase is one kind of program of the kills phase: the answer it must
// get, and the promised bound on that answer's time from the program's
// start (duration_ms), 0 for none (docs/performance.md, "Kills under load").
type killCase struct {
	name   string
	code   string
	right  func(a servicetest.Answer) bool
	within time.Duration
}

// killCases are the programs of the kills phase, in the order they are sent.
var killCases = []killCase{
	{"hello world", "print('hello')", func(a servicetest.Answer) bool {
		return a.Status == "ok" && a.Stdout == "hello\n"
	}, 0},
	{"deadline kill", "import time\nprint('sleeping', flush=True)\ntime.sleep(60)\n", func(a servicetest.Answer) bool {
		return a.Status == "timeout" && a.TimedOut && a.Stdout == "sleeping\n"
	}, killTimeout + 500*time.Millisecond},
	{"output-cap kill", "while True:\n    print('x' * 99)\n", func(a servicetest.Answer) bool {
		return a.Status == "output_limit" && a.Truncated
	}, time.Second},
	{"memory bomb, at once", "b = b'x' * (1 << 30)\n", memoryFailure, 2 * time.Second},
	{"memory bomb, growing", "c = []\nwhile True:\n    c.append(bytearray(1 << 20))\n", memoryFailure, 2 * time.Second},
}

// memoryFailure accepts the kernel's OOM kill or Python's own MemoryError.
func memoryFailure(a servicetest.Answer) bool {
	return (a.Status == "oom" && a.OOMKilled) || (a.Status == "error" && strings.Contains(a.Stderr, "MemoryError"))
}

// killStats is what one kind of program got in the kills phase.
type killStats struct {
	right, wrong, late int
	// fromStart is each right answer's time from the program's start.
	fromStart latencies
	// wall is each call's time from the request.
	wall    latencies
	example string // the first wrong answer, for the report
}

// killsPhase is the kills phase of one pool setting.
type killsPhase struct {
	pool   int
	byCase []killStats
	failed map[string]int64
}

// measureKills runs rounds of every kill case through the service, conc at
// once, with one CPU-bound goroutine spinning beside it (a busy host).
func measureKills(ctx context.Context, o *options, pool, rounds int) (killsPhase, error) {
	kp := killsPhase{pool: pool, byCase: make([]killStats, len(killCases))}
	var mu sync.Mutex
	var rec recorder
	env := []string{fmt.Sprintf("SANDBOX_RUNTIME_POOL_SIZE=%d", pool), "SANDBOX_RUNTIME_TIMEOUT=" + killTimeout.String()}
	if pool == 0 {
		env = append(env, "SANDBOX_RUNTIME_POOL_MAX=0")
	}
	_, err := withService(ctx, o, func(s *service) phase {
		stopHog := cpuHog()
		defer stopHog()
		var next atomic.Int64
		var wg sync.WaitGroup
		for range o.conc {
			wg.Go(func() {
				for ctx.Err() == nil {
					i := int(next.Add(1)) - 1
					if i >= rounds*len(killCases) {
						return
					}
					c := killCases[i%len(killCases)]
					a, wall, err := s.run(c.code)
					rec.record(wall, err)
					if err != nil {
						continue
					}
					mu.Lock()
					kp.byCase[i%len(killCases)].add(c, a, wall)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return phase{}
	}, env...)
	kp.failed = rec.p.failed
	return kp, err
}

// add records one answer of the case.
func (k *killStats) add(c killCase, a servicetest.Answer, wall time.Duration) {
	k.wall = append(k.wall, wall)
	fromStart := time.Duration(a.DurationMS) * time.Millisecond
	switch {
	case !c.right(a):
		k.wrong++
		if k.example == "" {
			k.example = fmt.Sprintf("status %s exit %d timed_out %v oom_killed %v after %v", a.Status, a.ExitCode, a.TimedOut, a.OOMKilled, fromStart)
		}
	case c.within > 0 && fromStart > c.within:
		k.late++
		k.fromStart = append(k.fromStart, fromStart)
	default:
		k.right++
		k.fromStart = append(k.fromStart, fromStart)
	}
}

// run posts a program and returns the service's answer and the call's time.
func (s *service) run(code string) (servicetest.Answer, time.Duration, error) {
	a, sm, err := s.post("python", code)
	return a, sm.wall, err
}

// post is run, with the phases the answer's Server-Timing lists.
func (s *service) post(language, code string) (servicetest.Answer, sample, error) {
	body, _ := json.Marshal(map[string]string{"language": language, "code": code})
	start := time.Now()
	resp, err := s.client.Post(s.url, "application/json", strings.NewReader(string(body)))
	if err != nil {
		return servicetest.Answer{}, sample{}, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	sm := sample{wall: time.Since(start), phases: parseServerTiming(resp.Header.Get("Server-Timing"))}
	if err != nil {
		return servicetest.Answer{}, sample{}, err
	}
	if resp.StatusCode != 200 {
		return servicetest.Answer{}, sample{}, fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	var a servicetest.Answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return servicetest.Answer{}, sample{}, fmt.Errorf("undecodable answer: %w", err)
	}
	return a, sm, nil
}

// cpuHog keeps one CPU busy, as `stress-ng --cpu 1` would, until stopped.
func cpuHog() (stop func()) {
	var done atomic.Bool
	go func() {
		runtime.LockOSThread()
		x := 1.0
		for !done.Load() {
			for range 1 << 16 {
				x = x*1.0000001 + 1e-9
			}
		}
		_ = x
	}()
	return func() { done.Store(true) }
}

// killsTable writes the kills phases against their promises.
func killsTable(w io.Writer, o options, phases []killsPhase) {
	if len(phases) == 0 {
		return
	}
	fmt.Fprintf(w, "\nKills under load: the service (runc, max_concurrency 8, timeout %v), %d callers in a closed loop over "+
		"hello world, a sleeper, an output flood and two memory bombs, with one CPU-bound thread spinning beside it. "+
		"Times from the program's start (`duration_ms`, from the code's hand-over); a hello world's call time at the same load "+
		"is what getting a container costs.\n\n", killTimeout, o.conc)
	fmt.Fprintln(w, "| pool | program | right | from its start | call | promise | |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, p := range phases {
		pool := "off"
		if p.pool > 0 {
			pool = fmt.Sprintf("%d", p.pool)
		}
		for i, c := range killCases {
			k := p.byCase[i]
			promise, verdict := "answered right", "PASS"
			if c.within > 0 {
				promise = fmt.Sprintf("right, within %v", c.within)
			}
			if k.wrong > 0 || k.late > 0 || k.right == 0 {
				verdict = "MISS"
			}
			right := fmt.Sprintf("%d of %d", k.right, k.right+k.wrong+k.late)
			if k.example != "" {
				right += " (first wrong: " + k.example + ")"
			}
			fmt.Fprintf(w, "| %s | %s | %s | p50 %.0f ms, max %.0f ms | p50 %.0f ms, max %.0f ms | %s | %s |\n",
				pool, c.name, right, ms(k.fromStart.pct(50)), ms(k.fromStart.pct(100)),
				ms(k.wall.pct(50)), ms(k.wall.pct(100)), promise, verdict)
		}
		if len(p.failed) > 0 {
			fmt.Fprintf(w, "| %s | failed calls | %s | | | none | MISS |\n", pool, failures(p.failed))
		}
	}
}
