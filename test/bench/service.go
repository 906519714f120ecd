package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"sandboxd/internal/servicetest"
	"sandboxd/test/bench/load"
)

// hello is the program of every call but the kills phase's.
const hello = "print('hello')"

// poolLine is the service's log line with the python pool's counts at
// close (the data pool logs its own zeros, before or after it).
var poolLine = regexp.MustCompile(`msg="pool closing".* environment=python .*hits=(\d+) waits=(\d+) misses=(\d+) started=(\d+) retired=(\d+)`)

// phase is what one load run of the service gave.
type phase struct {
	// began is when the phase began.
	began   time.Time
	latency latencies
	ok      int64
	failed  map[string]int64
	perSec  float64
	elapsed time.Duration
	// hits, waits and misses are the pool's counts: runs served by an
	// idle container, by one still starting, and by one of their own.
	hits   int64
	waits  int64
	misses int64
	// started and retired are the containers the pool started, and the
	// idle ones it removed unused (its churn), over the service's life.
	started  int64
	retired  int64
	inFlight int // the most calls in flight at once (open loop)
	// samples are the answers with their phases (Server-Timing).
	samples []sample
	// load is the host's load average (1 min) at the phase's end.
	load string
	// step, in a Poisson phase of the tail, is the load's first seconds
	// from an idle service (the pool at its least), before the arrivals
	// counted here; nil when there was none.
	step *phase
}

// failures counts the failed calls.
func (p phase) failures() int64 {
	var n int64
	for _, v := range p.failed {
		n += v
	}
	return n
}

// hitRatio is the share of runs that found an idle warm container.
func (p phase) hitRatio() float64 {
	if n := p.hits + p.waits + p.misses; n > 0 {
		return float64(p.hits) / float64(n)
	}
	return 0
}

// service is a sandboxd process started for one phase.
type service struct {
	*servicetest.Service
	url    string
	client *http.Client
	// pool holds the pool's counts from its last line about them.
	mu   sync.Mutex
	pool [5]int64
}

// withService starts sandboxd with its default configuration (free mode,
// on a free loopback port) changed by env, warms it up, runs f, stops it,
// and adds the pool's counts to f's phase.
func withService(ctx context.Context, o *options, f func(*service) phase, env ...string) (phase, error) {
	s, err := startService(ctx, o, env)
	if err != nil {
		return phase{}, err
	}
	for range 3 { // connection set-up and the pool's first fill
		if _, err := s.call(); err != nil {
			s.stop()
			return phase{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	time.Sleep(2 * time.Second)
	p := f(s)
	p.load = loadAverage()
	s.stop()
	p.hits, p.waits, p.misses, p.started, p.retired = s.pool[0], s.pool[1], s.pool[2], s.pool[3], s.pool[4]
	return p, nil
}

// startService starts the binary, its environment added to by env, and
// waits for it to listen.
func startService(ctx context.Context, o *options, env []string) (*service, error) {
	return startInstance(ctx, o, "bench", env)
}

// startInstance is startService under the runtime instance label
// instance, so that services running side by side never count or reap
// each other's containers.
func startInstance(ctx context.Context, o *options, instance string, env []string) (*service, error) {
	s := &service{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 60 * time.Second}}
	sv, err := servicetest.Launch(ctx, servicetest.Options{
		Binary:   o.binary,
		Instance: instance,
		// The load comes from one client (loopback): no per-client session cap.
		Env: append([]string{"SANDBOX_SERVER_LOG_LEVEL=info", "SANDBOX_RUNTIME_IMAGE=" + o.image,
			"SANDBOX_SESSIONS_MAX_PER_CLIENT=0"}, env...),
		OnLine:      s.readPool,
		StartWithin: 30 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	s.Service, s.url = sv, sv.URL+"/v1/code"
	return s, nil
}

// readPool keeps the pool's counts from the service's log.
func (s *service) readPool(line string) {
	if g := poolLine.FindStringSubmatch(line); g != nil {
		s.mu.Lock()
		for i := range s.pool {
			s.pool[i], _ = strconv.ParseInt(g[i+1], 10, 64)
		}
		s.mu.Unlock()
	}
}

// stop ends the service gracefully (killing it after 60 s) and waits for
// its log to end.
func (s *service) stop() { _ = s.Stop(60 * time.Second) }

// call posts hello world and checks the answer.
func (s *service) call() (time.Duration, error) {
	sm, err := s.callTimed()
	return sm.wall, err
}

// callTimed is call, with the phases the answer's Server-Timing lists.
func (s *service) callTimed() (sample, error) {
	a, sm, err := s.post("python", hello)
	if err != nil {
		return sample{}, err
	}
	if a.Stdout != "hello\n" || a.Status != "ok" {
		return sample{}, fmt.Errorf("wrong answer: status %q stdout %q", a.Status, a.Stdout)
	}
	return sm, nil
}

// recorder gathers the outcome of calls made from many goroutines.
type recorder struct {
	mu sync.Mutex
	p  phase
}

// record adds one call's outcome.
func (r *recorder) record(d time.Duration, err error) {
	r.recordSample(sample{wall: d}, err)
}

// recordSample adds one call's outcome, its phases kept when it has them.
func (r *recorder) recordSample(sm sample, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if r.p.failed == nil {
			r.p.failed = map[string]int64{}
		}
		r.p.failed[firstWords(err.Error())]++
		return
	}
	r.p.ok++
	r.p.latency = append(r.p.latency, sm.wall)
	if sm.phases != nil {
		r.p.samples = append(r.p.samples, sm)
	}
}

// done closes the phase begun at start.
func (r *recorder) done(start time.Time) phase {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p.began = start
	r.p.elapsed = time.Since(start)
	r.p.perSec = float64(r.p.ok) / r.p.elapsed.Seconds()
	return r.p
}

// sequential makes n calls one at a time, gap apart.
func (s *service) sequential(ctx context.Context, n int, gap time.Duration) phase {
	var r recorder
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		time.Sleep(gap)
		r.recordSample(s.callTimed())
	}
	return r.done(start)
}

// closedLoop keeps conc callers busy for the window.
func (s *service) closedLoop(ctx context.Context, conc int, window time.Duration) phase {
	var r recorder
	start := time.Now()
	load.Closed(ctx, conc, window, func() bool {
		r.recordSample(s.callTimed())
		return true
	})
	return r.done(start)
}

// poisson makes hello-world calls at random (exponential gaps) at rate a
// second for the window (0: no bound) or the first arrivals calls (0: no
// bound), whichever ends first, each on its own, whether or not the
// earlier ones answered (open loop), and waits for the last.
func (s *service) poisson(ctx context.Context, rate float64, window time.Duration, arrivals int) phase {
	return poissonOf(ctx, rate, window, arrivals, s.callTimed)
}

// poissonOf is poisson with call as each arrival's call.
func poissonOf(ctx context.Context, rate float64, window time.Duration, arrivals int, call func() (sample, error)) phase {
	var r recorder
	var wg sync.WaitGroup
	var mu sync.Mutex
	inFlight, most := 0, 0
	start := time.Now()
	next := start
	for n := 0; ctx.Err() == nil && (arrivals == 0 || n < arrivals); n++ {
		next = next.Add(time.Duration(rand.ExpFloat64() / rate * float64(time.Second)))
		if window > 0 && next.Sub(start) > window {
			break
		}
		time.Sleep(time.Until(next))
		at := next.Sub(start)
		wg.Go(func() {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			mu.Unlock()
			sm, err := call()
			sm.at = at
			r.recordSample(sm, err)
			mu.Lock()
			inFlight--
			mu.Unlock()
		})
	}
	wg.Wait()
	p := r.done(start)
	p.inFlight = most
	return p
}

func firstWords(s string) string {
	f := strings.Fields(s)
	if len(f) > 2 {
		f = f[:2]
	}
	return strings.Join(f, " ")
}
