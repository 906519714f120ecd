package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const hello = `{"language":"python","code":"print('hello')"}`

// The service's log lines the bench reads: where it listens, and the
// pool's counts at close.
var (
	listenLine = regexp.MustCompile(`msg=listening addr=(\S+)`)
	poolLine   = regexp.MustCompile(`msg="pool closing".* hits=(\d+) waits=(\d+) misses=(\d+)`)
)

// phase is what one load run of the service gave.
type phase struct {
	latency latencies
	ok      int64
	failed  map[string]int64
	perSec  float64
	elapsed time.Duration
	// hits, waits and misses are the pool's counts: runs served by an
	// idle container, by one still starting, and by one of their own.
	hits     int64
	waits    int64
	misses   int64
	inFlight int // the most calls in flight at once (open loop)
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
	cmd    *exec.Cmd
	url    string
	client *http.Client
	// logDone is closed once its stderr is read to the end; pool holds
	// the pool's counts from its last line about them.
	logDone chan struct{}
	mu      sync.Mutex
	pool    [3]int64
}

// withService starts sandboxd with its default configuration (free mode,
// on a free loopback port), warms it up, runs f, stops it, and adds the
// pool's counts to f's phase.
func withService(ctx context.Context, o *options, f func(*service) phase) (phase, error) {
	s, err := startService(ctx, o)
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
	s.stop()
	p.hits, p.waits, p.misses = s.pool[0], s.pool[1], s.pool[2]
	return p, nil
}

// startService starts the binary and waits for it to listen.
func startService(ctx context.Context, o *options) (*service, error) {
	cmd := exec.CommandContext(ctx, o.binary, "serve")
	cmd.Env = append(os.Environ(), "SANDBOX_SERVER_ADDR=127.0.0.1:0", "SANDBOX_SERVER_METRICS_ADDR=127.0.0.1:0", "SANDBOX_RUNTIME_INSTANCE=bench",
		"SANDBOX_SERVER_LOG_LEVEL=info", "SANDBOX_RUNTIME_IMAGE="+o.image)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &service{cmd: cmd, logDone: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 60 * time.Second}}
	addr := make(chan string, 1)
	go s.readLog(stderr, addr)
	select {
	case a := <-addr:
		s.url = "http://" + a + "/v1/code"
		return s, nil
	case <-time.After(30 * time.Second):
		s.stop()
		return nil, fmt.Errorf("sandboxd did not start")
	}
}

// readLog reads the service's log for its address and its pool's counts.
func (s *service) readLog(r io.Reader, addr chan<- string) {
	defer close(s.logDone)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if g := listenLine.FindStringSubmatch(line); g != nil {
			addr <- g[1]
		}
		if g := poolLine.FindStringSubmatch(line); g != nil {
			s.mu.Lock()
			for i := range s.pool {
				s.pool[i], _ = strconv.ParseInt(g[i+1], 10, 64)
			}
			s.mu.Unlock()
		}
	}
}

// stop ends the service gracefully and waits for its log to end.
func (s *service) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.logDone:
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
	}
	_ = s.cmd.Wait()
}

// call posts hello world and checks the answer.
func (s *service) call() (time.Duration, error) {
	start := time.Now()
	resp, err := s.client.Post(s.url, "application/json", strings.NewReader(hello))
	if err != nil {
		return 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	var a struct{ Stdout, Status string }
	if err := json.Unmarshal(body, &a); err != nil || a.Stdout != "hello\n" || a.Status != "ok" {
		return 0, fmt.Errorf("wrong answer: %s", body)
	}
	return d, nil
}

// recorder gathers the outcome of calls made from many goroutines.
type recorder struct {
	mu sync.Mutex
	p  phase
}

// record adds one call's outcome.
func (r *recorder) record(d time.Duration, err error) {
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
	r.p.latency = append(r.p.latency, d)
}

// done closes the phase begun at start.
func (r *recorder) done(start time.Time) phase {
	r.mu.Lock()
	defer r.mu.Unlock()
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
		r.record(s.call())
	}
	return r.done(start)
}

// closedLoop keeps conc callers busy for the window.
func (s *service) closedLoop(ctx context.Context, conc int, window time.Duration) phase {
	var r recorder
	start := time.Now()
	deadline := start.Add(window)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				r.record(s.call())
			}
		})
	}
	wg.Wait()
	return r.done(start)
}

// poisson makes calls at random (exponential gaps) at rate a second for
// the window, each on its own, whether or not the earlier ones answered
// (open loop), and waits for the last.
func (s *service) poisson(ctx context.Context, rate float64, window time.Duration) phase {
	var r recorder
	var wg sync.WaitGroup
	var mu sync.Mutex
	inFlight, most := 0, 0
	start := time.Now()
	next := start
	for ctx.Err() == nil {
		next = next.Add(time.Duration(rand.ExpFloat64() / rate * float64(time.Second)))
		if next.Sub(start) > window {
			break
		}
		time.Sleep(time.Until(next))
		wg.Go(func() {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			mu.Unlock()
			r.record(s.call())
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
