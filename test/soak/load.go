package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"
)

// tally counts the outcomes of one program's requests.
type tally struct {
	sent, correct, alt, wrong, busy, server, other int
	latencies                                      []time.Duration
	examples                                       []string
	// outcomes counts the delivered answers by status, flags and exit code.
	outcomes map[string]int
}

// loadResult is the outcome of the whole load.
type loadResult struct {
	elapsed  time.Duration
	sent     int
	byName   map[string]*tally
	statuses map[int]int
}

// maxExamples bounds the wrong answers kept per program for the report.
const maxExamples = 3

// load sends n requests from conc callers until done or ctx ends.
func load(ctx context.Context, url string, n, conc int) loadResult {
	res := loadResult{byName: map[string]*tally{}, statuses: map[int]int{}}
	for _, p := range programs {
		res.byName[p.name] = &tally{outcomes: map[string]int{}}
	}
	client := &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: conc},
		Timeout:   2 * time.Minute,
	}
	defer client.CloseIdleConnections()
	next := make(chan int)
	go func() {
		defer close(next)
		for i := 0; i < n; i++ {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p := pick(i)
				nonce := fmt.Sprintf("n%05d", i)
				began := time.Now()
				status, a, err := post(ctx, client, url, p.code(nonce))
				took := time.Since(began)
				mu.Lock()
				res.record(p, nonce, status, a, err, took)
				mu.Unlock()
				if i > 0 && i%200 == 0 {
					progress("%d requests sent after %s", i, time.Since(start).Round(time.Second))
				}
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// record files one request's outcome.
func (r *loadResult) record(p program, nonce string, status int, a answer, err error, took time.Duration) {
	t := r.byName[p.name]
	t.sent++
	r.sent++
	r.statuses[status]++
	note := func(s string) {
		if len(t.examples) < maxExamples {
			t.examples = append(t.examples, fmt.Sprintf("%s %s: %s", p.name, nonce, s))
		}
	}
	switch {
	case err != nil:
		t.other++
		note(err.Error())
	case status == http.StatusOK:
		t.latencies = append(t.latencies, took)
		t.outcomes[outcome(a)]++
		diff := p.check(nonce, a)
		switch {
		case diff == "":
			t.correct++
		case p.alt != nil && p.alt(nonce, a) == "":
			t.alt++
		default:
			t.wrong++
			note(diff)
		}
	case status == http.StatusTooManyRequests:
		t.busy++
	case status >= 500:
		t.server++
		note(fmt.Sprintf("HTTP %d: %s", status, a.Error))
	default:
		t.other++
		note(fmt.Sprintf("HTTP %d: %s", status, a.Error))
	}
}

// post sends one program and decodes the answer.
func post(ctx context.Context, client *http.Client, url, code string) (int, answer, error) {
	body, _ := json.Marshal(map[string]string{"language": "python", "code": code})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/code", bytes.NewReader(body))
	if err != nil {
		return 0, answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, answer{}, fmt.Errorf("reading the answer: %w", err)
	}
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return resp.StatusCode, a, fmt.Errorf("HTTP %d, answer not JSON: %.120q", resp.StatusCode, raw)
	}
	return resp.StatusCode, a, nil
}

// warmUp waits until the service answers a hello world (the first runs pay
// for the daemon's caches), so the "before" figures are of a running service.
func warmUp(ctx context.Context, url string) error {
	client := &http.Client{Timeout: time.Minute}
	defer client.CloseIdleConnections()
	for i := 0; i < 3; i++ {
		status, a, err := post(ctx, client, url, "print('warm')\n")
		if err != nil {
			return err
		}
		if status != http.StatusOK || a.Stdout != "warm\n" {
			return fmt.Errorf("HTTP %d, answer %+v", status, a)
		}
	}
	return nil
}

// pct returns the p-th percentile (0..100) of the durations, nearest rank.
func pct(l []time.Duration, p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), l...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p/100*float64(len(s)) + 0.5)
	return s[min(max(i, 1), len(s))-1]
}
