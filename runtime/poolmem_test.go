package runtime

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd/internal/units"
)

// The memory budget of the warm pools, with fakes: no test here reaches
// Docker.

// TestMemoryBudgetSharedByPools: pools grow within one budget, each
// container counted at its pool's size; what one holds is room the other
// lacks, and a smaller measured size frees room.
func TestMemoryBudgetSharedByPools(t *testing.T) {
	b := newMemoryBudget(1000)
	py, data := &pool{}, &pool{}
	if k := b.grow(py, 0, 8, 100); k != 8 {
		t.Fatalf("python grew by %d, want 8 (800 of 1000)", k)
	}
	if k := b.grow(data, 0, 4, 300); k != 0 {
		t.Fatalf("data grew by %d with 200 left, want 0", k)
	}
	b.set(py, 2, 100) // six taken by runs
	if k := b.grow(data, 0, 4, 300); k != 2 {
		t.Fatalf("data grew by %d with 800 left, want 2", k)
	}
	b.set(py, 2, 50) // python's measured size
	if k := b.grow(data, 2, 4, 300); k != 1 {
		t.Fatalf("data grew by %d with 300 left, want 1", k)
	}
	if used := b.used(); used != 2*50+3*300 {
		t.Fatalf("used %d, want 1000", used)
	}
	if k := b.grow(py, 2, 1, 50); k != 0 {
		t.Fatalf("python grew by %d in a full budget", k)
	}
	b.set(data, 0, 300)
	if used := b.used(); used != 100 {
		t.Fatalf("used %d after data emptied, want 100", used)
	}
	var none *memoryBudget
	if k := none.grow(py, 100, 5, 1<<40); k != 5 {
		t.Fatalf("no budget: grew by %d, want 5", k)
	}
	none.set(py, 3, 1)
	if newMemoryBudget(0) != nil {
		t.Fatal("a budget of 0 bytes bounds, want none")
	}
}

// hangingEngine points the Docker client at a socket that accepts and
// never answers until the returned release (also called when the test
// ends) closes it: every start a pool begins waits until then.
func hangingEngine(t *testing.T) (release func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	var once sync.Once
	release = func() {
		once.Do(func() {
			ln.Close()
			<-done
			for _, c := range conns {
				c.Close()
			}
		})
	}
	t.Setenv("DOCKER_HOST", "unix://"+path)
	return release
}

// budgetedPool is the pool of a runner of least = most containers of
// memory bytes each, under budget, over the hanging engine.
func budgetedPool(t *testing.T, release func(), budget *memoryBudget, memory int64, size int) *pool {
	t.Helper()
	cfg := Config{Image: "unit", Timeout: 5 * time.Second, MemoryBytes: units.Bytes(memory), NanoCPUs: 1e9, PidsLimit: 64,
		TmpfsBytes: 16 << 20, MaxOutputBytes: 64 << 10, PoolSize: size, PoolMax: size, Instance: "unit"}
	d, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.pool.budget = budget
	t.Cleanup(func() {
		release()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := d.pool.close(ctx); err != nil {
			t.Error(err)
		}
		d.cli.Close()
	})
	return d.pool
}

// setFillConcurrency sets the most starts at once for the test.
func setFillConcurrency(t *testing.T, n int) {
	was := fillConcurrencyMost
	fillConcurrencyMost = n
	t.Cleanup(func() { fillConcurrencyMost = was })
}

// TestPoolStartsNoMoreThanTheCores: however many runs wait, the
// pool starts no more containers at once than the cores, so the starts
// never crowd out the programs that run (each run that finds every start
// promised starts its own, bounded by the admission slots).
func TestPoolStartsNoMoreThanTheCores(t *testing.T) {
	setFillConcurrency(t, 2)
	release := hangingEngine(t)
	p := budgetedPool(t, release, nil, 128<<20, 16)
	p.mu.Lock()
	p.waiters = make([]chan *box, 10)
	p.mu.Unlock()
	if n := fill(p); n != 2 {
		t.Errorf("with 10 runs waiting the pool starts %d at once, want the cores, 2", n)
	}
	p.mu.Lock()
	p.waiters = nil
	p.mu.Unlock()
}

// fill starts what the pool may start now and returns how many it holds.
func fill(p *pool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started = true
	// Arrivals fast enough that the starts at once are the most.
	p.sizer.rate, p.sizer.fast, p.sizer.last = 100, 100, p.now()
	p.fillLocked()
	return len(p.idle) + p.starting
}

// TestPoolsFillWithinTheMemoryBudget: two environments' pools start no
// more containers than the shared budget holds, each counted at its memory
// limit until measured; a measured resident size lets more start; a pool
// that closes gives its share back.
func TestPoolsFillWithinTheMemoryBudget(t *testing.T) {
	setFillConcurrency(t, 8) // more starts at once than the budget holds
	release := hangingEngine(t)
	budget := newMemoryBudget(384 << 20)
	py := budgetedPool(t, release, budget, 128<<20, 4)
	data := budgetedPool(t, release, budget, 256<<20, 2)
	if n := fill(py); n != 3 {
		t.Fatalf("python holds %d, want 3 × 128 MiB of the 384 MiB", n)
	}
	if n := fill(data); n != 0 {
		t.Fatalf("data holds %d in a full budget, want 0", n)
	}
	py.mu.Lock()
	py.measured.Store(32 << 20) // python's warm containers measured at 32 MiB
	py.accountLocked()
	py.mu.Unlock()
	if n := fill(data); n != 1 {
		t.Fatalf("data holds %d with 288 MiB free, want 1 × 256 MiB", n)
	}
	if n := fill(py); n != 4 {
		t.Fatalf("python holds %d with 32 MiB free, want 4 × 32 MiB", n)
	}
	if used := budget.used(); used != 4*32<<20+256<<20 {
		t.Fatalf("budget holds %d MiB, want 384", used>>20)
	}
	release() // the starts fail now, and python closes
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := py.close(ctx); err != nil {
		t.Fatal(err)
	}
	budget.mu.Lock()
	_, held := budget.held[py]
	budget.mu.Unlock()
	if held {
		t.Fatal("python's pool closed and still holds a share of the budget")
	}
}

// fakeStatsEngine answers the Engine API's ping and one-shot stats of
// container "c1" with body.
func fakeStatsEngine(t *testing.T, body string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		switch {
		case strings.HasSuffix(r.URL.Path, "/_ping"):
			w.Write([]byte("OK"))
		case strings.HasSuffix(r.URL.Path, "/containers/c1/stats") && r.URL.Query().Get("one-shot") == "1":
			w.Write([]byte(body))
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	t.Setenv("DOCKER_HOST", "unix://"+path)
}

// TestResidentSizeFromStats: the resident size is the cgroup's usage
// without its inactive file cache, in cgroup v1's and v2's spelling; a
// stats answer with no usage is an error, never a size of 0.
func TestResidentSizeFromStats(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       int64
	}{
		{"cgroup v1", `{"memory_stats":{"usage":20000000,"stats":{"total_inactive_file":4000000,"rss":15000000}}}`, 16000000},
		{"cgroup v2", `{"memory_stats":{"usage":30000000,"stats":{"inactive_file":1000000,"anon":28000000}}}`, 29000000},
		{"no usage", `{"memory_stats":{}}`, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeStatsEngine(t, tc.body)
			d, err := New(Config{Image: "unit", Timeout: 5 * time.Second, MemoryBytes: 128 << 20, NanoCPUs: 1e9, PidsLimit: 64,
				TmpfsBytes: 16 << 20, MaxOutputBytes: 64 << 10, Instance: "unit"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer d.cli.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			n, err := d.residentSize(ctx, "c1")
			if (tc.want < 0) != (err != nil) || (tc.want >= 0 && n != tc.want) {
				t.Fatalf("residentSize = %d, %v; want %d", n, err, tc.want)
			}
		})
	}
}
