package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sandboxd/internal/pgtest"
	"sandboxd/internal/servicetest"
)

// The fleet phase (-fleet-only runs just this): the cost of
// forwarding a session's call. Two replicas in free mode share a throwaway
// PostgreSQL; a session opened on replica a is called `x += 1; x`
// alternately on a (direct) and through b (forwarded to a), so that drift
// in the host affects both alike.

// fleetReport is the fleet phase's figures.
type fleetReport struct {
	direct, forwarded latencies
	load              string
}

// measureFleet runs the fleet phase: n calls each way.
func measureFleet(ctx context.Context, o *options, n int) (fleetReport, error) {
	var r fleetReport
	pg, err := pgtest.Start(ctx)
	if err != nil {
		return r, err
	}
	defer pg.Stop()
	dir, err := os.MkdirTemp("", "bench-fleet-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	secret := filepath.Join(dir, "fleet.secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		return r, err
	}
	var nodes []*service
	defer func() {
		for _, s := range nodes {
			s.stop()
		}
	}()
	for _, name := range []string{"a", "b"} {
		addr, err := freeLoopback()
		if err != nil {
			return r, err
		}
		s, err := launchReplica(ctx, o, name, []string{"SANDBOX_PAYMENTS_LEDGER=" + pg.URL("postgres"),
			"SANDBOX_PAYMENTS_REPLICA_ID=bench-" + name, "SANDBOX_SERVER_ADDR=" + addr,
			"SANDBOX_SERVER_ADVERTISE_URL=http://" + addr, "SANDBOX_SERVER_TRUSTED_PROXIES=127.0.0.1",
			"SANDBOX_SERVER_FLEET_SECRET_FILE=" + secret})
		if err != nil {
			return r, err
		}
		nodes = append(nodes, s)
	}
	a, b := nodes[0], nodes[1]
	id, _, err := a.openSession("python")
	if err != nil {
		return r, err
	}
	defer a.closeSession(id)
	progress("fleet: %d session calls each way, direct to the holder and forwarded through another replica", n)
	for i := range 2*n + 10 {
		via := a
		if i%2 == 1 {
			via = b
		}
		_, d, err := via.callAt(sessionPath(id), map[string]string{"code": "x = globals().get('x', 0) + 1\nx"})
		if err != nil {
			return r, fmt.Errorf("call %d: %w", i, err)
		}
		if i < 10 { // connections and the first hop's set-up
			continue
		}
		if via == a {
			r.direct = append(r.direct, d)
		} else {
			r.forwarded = append(r.forwarded, d)
		}
	}
	r.load = loadAverage()
	return r, nil
}

// launchReplica starts the binary as replica name of a fleet.
func launchReplica(ctx context.Context, o *options, name string, env []string) (*service, error) {
	s := &service{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 60 * time.Second}}
	sv, err := servicetest.Launch(ctx, servicetest.Options{Binary: o.binary, Instance: "bench-fleet-" + name,
		Env: append([]string{"SANDBOX_RUNTIME_IMAGE=" + o.image, "SANDBOX_RUNTIME_POOL_SIZE=1"}, env...), StartWithin: 60 * time.Second})
	if err != nil {
		return nil, err
	}
	s.Service, s.url = sv, sv.URL+"/v1/code"
	return s, nil
}

// freeLoopback is a loopback address whose port is free now.
func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// fleetTable prints the fleet phase.
func fleetTable(w io.Writer, r fleetReport) {
	dp, fp := r.direct.pct(50), r.forwarded.pct(50)
	fmt.Fprintf(w, "\n| session call `x += 1; x` (free mode), load %s | p50 | p90 | p99 | calls |\n|---|---|---|---|---|\n", r.load)
	fmt.Fprintf(w, "| direct to the replica that holds it | %.1f ms | %.1f ms | %.1f ms | %d |\n", ms(dp), ms(r.direct.pct(90)), ms(r.direct.pct(99)), len(r.direct))
	fmt.Fprintf(w, "| forwarded by another replica | %.1f ms | %.1f ms | %.1f ms | %d |\n", ms(fp), ms(r.forwarded.pct(90)), ms(r.forwarded.pct(99)), len(r.forwarded))
	ratio := 0.0
	if dp > 0 {
		ratio = float64(fp) / float64(dp)
	}
	fmt.Fprintf(w, "\nForwarding cost: p50 %.2f× the direct call (+%.1f ms).\n", ratio, ms(fp-dp))
}
