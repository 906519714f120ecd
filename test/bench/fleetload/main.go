// Command fleetload sends free-mode runs to one or more sandboxd replicas
// round-robin at a fixed concurrency for a while and prints the throughput
// and latency, to compare one replica with several on one host:
//
//	go run ./test/bench/fleetload -urls http://127.0.0.1:8081,http://127.0.0.1:8082 -c 24 -d 20s
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sandboxd/test/bench/load"
)

func main() {
	urls := flag.String("urls", "http://127.0.0.1:8081", "comma-separated base URLs of the replicas")
	conc := flag.Int("c", 24, "requests in flight")
	dur := flag.Duration("d", 20*time.Second, "how long to send")
	code := flag.String("code", "print(6*7)", "the program each request runs")
	flag.Parse()
	targets := strings.Split(*urls, ",")
	body := []byte(fmt.Sprintf(`{"code":%q}`, *code))
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *conc}}
	var (
		next     atomic.Int64
		mu       sync.Mutex
		lat      []time.Duration
		statuses = map[int]int{}
	)
	start := time.Now()
	load.Closed(context.Background(), *conc, *dur, func() bool {
		url := targets[next.Add(1)%int64(len(targets))] + "/v1/code"
		t := time.Now()
		status := 0
		res, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			status = res.StatusCode
		}
		mu.Lock()
		statuses[status]++
		if status == http.StatusOK {
			lat = append(lat, time.Since(t))
		}
		mu.Unlock()
		return true
	})
	elapsed := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[int(p*float64(len(lat)-1))]
	}
	fmt.Fprintf(os.Stdout, "replicas=%d concurrency=%d duration=%s ok=%d runs/s=%.1f p50=%s p99=%s statuses=%v\n",
		len(targets), *conc, elapsed.Round(time.Millisecond), len(lat), float64(len(lat))/elapsed.Seconds(),
		pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), statuses)
}
