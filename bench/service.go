package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const hello = `{"language":"python","code":"print('hello')"}`

var listenLine = regexp.MustCompile(`msg=listening addr=(\S+)`)

// measureService starts sandboxd (free mode) on a free port with the pool
// size, and measures sequential latency and throughput.
func measureService(ctx context.Context, o options, name string, pool int) (modeReport, error) {
	m := modeReport{name: name, pool: pool}
	conc := o.conc[len(o.conc)-1]
	cmd := exec.CommandContext(ctx, o.binary, "serve")
	cmd.Env = append(os.Environ(), "SANDBOX_SERVER_ADDR=127.0.0.1:0", "SANDBOX_SERVER_METRICS_ADDR=127.0.0.1:0",
		"SANDBOX_RUNTIME_INSTANCE=bench", fmt.Sprintf("SANDBOX_RUNTIME_POOL_SIZE=%d", pool),
		fmt.Sprintf("SANDBOX_RUNTIME_MAX_CONCURRENCY=%d", conc), "SANDBOX_RUNTIME_QUEUE_WAIT=30s")
	cmd.Env = append(cmd.Env, "SANDBOX_SERVER_LOG_LEVEL=info")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return m, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if g := listenLine.FindStringSubmatch(sc.Text()); g != nil {
				addr <- g[1]
			}
		}
	}()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a + "/v1/code"
	case <-time.After(30 * time.Second):
		return m, fmt.Errorf("sandboxd did not start")
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 60 * time.Second}
	// Warm up: the first calls pay for the pool's fill and connection set-up.
	for i := 0; i < 10; i++ {
		if _, err := call(client, url); err != nil {
			return m, fmt.Errorf("warm-up: %w", err)
		}
	}
	time.Sleep(2 * time.Second)
	for i := 0; i < o.sequential; i++ {
		time.Sleep(o.gap)
		d, err := call(client, url)
		if err != nil {
			return m, fmt.Errorf("sequential call %d: %w", i, err)
		}
		m.seq = append(m.seq, d)
	}
	before := procStat(cmd.Process.Pid)
	for _, c := range o.conc {
		progress("  throughput at concurrency %d for %v", c, o.window)
		m.throughput = append(m.throughput, throughput(ctx, client, url, c, o.window))
	}
	after := procStat(cmd.Process.Pid)
	m.cpu = after.cpu - before.cpu
	m.peakRSSKiB = after.peakRSSKiB
	return m, nil
}

// call posts hello world and checks the answer.
func call(client *http.Client, url string) (time.Duration, error) {
	start := time.Now()
	resp, err := client.Post(url, "application/json", strings.NewReader(hello))
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
	var a struct{ Stdout string }
	if err := json.Unmarshal(body, &a); err != nil || a.Stdout != "hello\n" {
		return 0, fmt.Errorf("wrong answer: %s", body)
	}
	return d, nil
}

// throughputRun is one closed-loop load run.
type throughputRun struct {
	conc    int
	ok      int64
	errors  int64
	status  map[string]int64
	perSec  float64
	latency latencies
}

// throughput keeps conc callers busy for the window and counts answers.
func throughput(ctx context.Context, client *http.Client, url string, conc int, window time.Duration) throughputRun {
	r := throughputRun{conc: conc, status: map[string]int64{}}
	var ok, bad atomic.Int64
	var mu sync.Mutex
	deadline := time.Now().Add(window)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				d, err := call(client, url)
				mu.Lock()
				if err != nil {
					bad.Add(1)
					r.status[firstWords(err.Error())]++
				} else {
					ok.Add(1)
					r.latency = append(r.latency, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	r.ok, r.errors = ok.Load(), bad.Load()
	r.perSec = float64(r.ok) / time.Since(start).Seconds()
	return r
}

func firstWords(s string) string {
	f := strings.Fields(s)
	if len(f) > 2 {
		f = f[:2]
	}
	return strings.Join(f, " ")
}

// stat is a process's CPU time and peak RSS.
type stat struct {
	cpu        time.Duration
	peakRSSKiB int64
}

// procStat reads utime+stime from /proc/PID/stat and VmHWM from status.
func procStat(pid int) stat {
	var s stat
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) > 12 {
			ut, _ := strconv.ParseInt(fields[11], 10, 64)
			st, _ := strconv.ParseInt(fields[12], 10, 64)
			s.cpu = time.Duration(ut+st) * time.Second / 100 // USER_HZ
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "VmHWM:") {
				s.peakRSSKiB, _ = strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			}
		}
	}
	return s
}
