package hostile

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandboxd/internal/servicetest"
)

// serviceGauges are the service's own counts from its metrics: goroutines,
// open descriptors, heap in use.
type serviceGauges struct{ goroutines, fds, heap float64 }

// scrape reads the service's gauges from its metrics listener.
func scrape(tb testing.TB, svc *servicetest.Service) serviceGauges {
	tb.Helper()
	resp, err := http.Get(svc.MetricsURL() + "/metrics")
	if err != nil {
		tb.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	var g serviceGauges
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "go_goroutines":
			g.goroutines = v
		case "process_open_fds":
			g.fds = v
		case "go_memstats_heap_inuse_bytes":
			g.heap = v
		}
	}
	return g
}

// assertServiceFlat fails the test when the service holds more goroutines
// or descriptors than at base (with the slack of warm containers being
// replaced), waiting up to 30 s for removals to finish.
func assertServiceFlat(tb testing.TB, svc *servicetest.Service, base serviceGauges, when string) {
	tb.Helper()
	var now serviceGauges
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		if now = scrape(tb, svc); now.goroutines <= base.goroutines+30 && now.fds <= base.fds+12 {
			tb.Logf("%s: %.0f goroutines (%.0f before), %.0f fds (%.0f), heap %.1f MiB (%.1f)", when, now.goroutines,
				base.goroutines, now.fds, base.fds, now.heap/(1<<20), base.heap/(1<<20))
			return
		}
	}
	tb.Errorf("%s: %.0f goroutines (%.0f before), %.0f fds (%.0f before): a leak", when, now.goroutines, base.goroutines, now.fds, base.fds)
}

// longProbe is a call of the long session: a counter, and every 50th call
// the container's own counts (its descriptors, processes, resident KiB).
const longProbe = `x += 1
if x % 50 == 0:
    import os
    rss = [l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1]
    print(len(os.listdir('/proc/self/fd')), len([p for p in os.listdir('/proc') if p.isdigit()]), rss)
x`

// runLongSession runs n calls in one session: each right, and neither the
// service's gauges nor the container's counts grow.
func runLongSession(t *testing.T, svc *servicetest.Service, c *sessionClient, env environment, n int) {
	s := c.open(t, env.name)
	defer s.close(t)
	if a := s.call(t, "x = 0"); a.code != 200 || a.Status != "ok" {
		t.Fatalf("x = 0: %s", a)
	}
	began := time.Now()
	var base serviceGauges
	var first []string
	for i := 1; i <= n; i++ {
		a := s.call(t, longProbe)
		if a.code != 200 || a.Status != "ok" || a.SessionEnded || a.Result == nil || *a.Result != strconv.Itoa(i) {
			t.Fatalf("call %d: %s", i, a)
		}
		if i%50 == 0 {
			counts := strings.Fields(a.Stdout)
			if first == nil {
				first, base = counts, scrape(t, svc)
			} else if len(counts) != 3 || counts[0] != first[0] || counts[1] != first[1] {
				t.Errorf("call %d: the container holds fds, pids, rss %v, at call 50 %v", i, counts, first)
			} else if rss, _ := strconv.Atoi(counts[2]); rss > atoi(first[2])+4096 {
				t.Errorf("call %d: the interpreter's resident memory grew from %s to %d KiB", i, first[2], rss)
			}
		}
	}
	took := time.Since(began)
	t.Logf("%d calls in %s (%s each); the container at call 50 and %d: %v", n, took.Round(time.Millisecond), (took / time.Duration(n)).Round(time.Microsecond), n, first)
	now := scrape(t, svc)
	if now.goroutines > base.goroutines+10 || now.fds > base.fds+6 || now.heap > base.heap+32<<20 {
		t.Errorf("the service grew over the session: %+v at call 50, %+v at the end", base, now)
	}
}

// atoi is strconv.Atoi without the error (0).
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
