// Command bench measures sandboxd against the limit of the engine under it,
// in one run on one machine, and prints one Markdown table with the
// targets and whether each is met:
//
//   - the engine ceiling: create+start+wait+remove cycles a second of the
//     service's own container spec (as the engine reports a warm one), concurrency 8; and the
//     same with NetworkDisabled off, for the A/B of that field;
//   - saturation: the service (its default configuration) under 8 callers
//     in a closed loop, as a ratio to the ceiling, with failures counted;
//   - open-loop Poisson arrivals at 40 % and 60 % of the ceiling (issue
//     28), 400 arrivals each: p50, p90, p99, max, answers over 100 ms, the
//     p99 against the sparse p50, the pool's hit ratio, failures, and the
//     phases (Server-Timing) the slowest 1 % spent their time in; with
//     -compare, the same for a second binary right after, for an A/B;
//     -tail-only runs just these and what they compare with;
//   - saturation interleaved with the ceiling: rounds of a 5 s slice of
//     each, in turns, so both see the same minutes of the machine;
//   - sparse sequential calls against `docker run --rm`;
//   - host CPU per answer at saturation (/proc/stat), split by process
//     (/proc/<pid>/stat for those alive, process accounting for those that
//     ended during the window), beside the ceiling's CPU per cycle, and
//     the hypervisor's steal apart;
//   - kills under load: deadline kills, output-cap kills, memory
//     bombs and hello worlds, 8 at once with a CPU hog beside, pool on and
//     off, each against its promised answer time from the program's start
//     (-kills-only runs just these);
//   - the data environment (-data-only runs just this): its
//     engine ceiling, `docker run --rm` of the data image against the warm
//     runtime for a pandas import, a chart's answer time, and saturation
//     against that ceiling with the host's CPU by process;
//   - the fleet (only with -fleet-only, which needs PostgreSQL):
//     a session's call direct to the replica that holds it against the
//     same call forwarded by another replica;
//   - sessions (-sessions-only runs just this): `x += 1; x` in a
//     warm session beside a one-shot call, sparse and at 40 % load, the
//     open with a warm container idle, and a five-step pandas analysis in
//     a session against one-shot calls that each reload the data;
//   - channels (-channels-only runs just this): on anvil mining
//     a block every 2 s, print(1) through the official x402 client, free,
//     paid by `exact` and by a batch-settlement voucher, one-shot and in
//     sessions; and the gas a call of a channel claimed once costs
//     against an `exact` transfer's;
//   - languages (-languages-only runs just this): a hello world
//     of Python, JavaScript, TypeScript and Bash through the API, sparse in
//     turns and each at 40 % load, and a session call of each.
//
// Run it with `make bench` (which builds the binary and the images and
// installs the interop tests' npm packages first). It takes about ten
// minutes (the data phase about three of them, the channels two).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	goruntime "runtime"
	"strings"
	"time"
)

// options are the knobs of a bench run.
type options struct {
	binary     string
	image      string
	dockerRuns int
	sparse     int
	gap        time.Duration
	ceiling    time.Duration
	window     time.Duration
	poisson    time.Duration
	conc       int
	killRounds int
	killsOnly  bool
	dataImage  string
	dataGap    time.Duration
	dataOnly   bool
	// sessionRounds is how many times the sessions phase runs its pandas
	// analysis each way; sessionsOnly runs only that phase.
	sessionRounds int
	sessionsOnly  bool
	// arrivals is the length of each Poisson phase of the tail, in
	// arrivals; tailOnly runs only what the tail's targets need; compare,
	// when set, is a second binary whose Poisson phases run right after
	// binary's, for an A/B in one run; stepWindow is the start of each
	// Poisson phase, from an idle service to the load, reported apart from
	// the steady arrivals counted after it.
	arrivals   int
	stepWindow time.Duration
	tailOnly   bool
	compare    string
	// interleaveRounds rounds of an interleaveSlice of saturation and one
	// of the ceiling measure saturation in the same minutes as its
	// ceiling (interleave.go); 0 rounds: not measured.
	interleaveRounds int
	interleaveSlice  time.Duration
	// fleetOnly runs only the fleet phase, fleetCalls calls each way.
	fleetOnly  bool
	fleetCalls int
	// channelsOnly runs only the channels phase: on anvil mining a block
	// every blockTime, channelCalls calls of each row, and a channel of
	// gasCalls calls claimed and swept once.
	channelsOnly bool
	blockTime    time.Duration
	channelCalls int
	gasCalls     int
	// languagesOnly runs only the languages phase; nodeImage is the node
	// environment's image.
	languagesOnly bool
	nodeImage     string
}

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "bin/sandboxd", "the sandboxd binary to measure")
	flag.StringVar(&o.image, "image", "sandbox-python:3.11", "the sandbox image")
	flag.IntVar(&o.dockerRuns, "docker-runs", 10, "`docker run --rm` samples")
	flag.IntVar(&o.sparse, "n", 60, "sparse sequential hello-world calls")
	flag.DurationVar(&o.gap, "gap", 500*time.Millisecond, "pause before each sparse call and each `docker run`")
	flag.DurationVar(&o.ceiling, "ceiling-window", 15*time.Second, "length of each engine-ceiling run")
	flag.DurationVar(&o.window, "window", 20*time.Second, "length of the saturation run")
	flag.DurationVar(&o.poisson, "poisson-window", 30*time.Second, "length of the sessions phase's Poisson load")
	flag.IntVar(&o.arrivals, "poisson-arrivals", 400, "arrivals of each Poisson phase of the tail (40 % and 60 % of the ceiling)")
	flag.IntVar(&o.interleaveRounds, "interleave-rounds", 4, "rounds of saturation interleaved with the ceiling, after the tail's Poisson phases (0: none)")
	flag.DurationVar(&o.interleaveSlice, "interleave-slice", 5*time.Second, "length of each slice of the interleaved saturation, the service's and the engine's")
	flag.DurationVar(&o.stepWindow, "poisson-step", 10*time.Second, "the first seconds of each Poisson phase of the tail, from an idle service, reported apart and not counted in its figures (0: none)")
	flag.BoolVar(&o.tailOnly, "tail-only", false, "run only the tail's phases: ceiling, docker run, sparse, saturation, Poisson at 40 % and 60 %")
	flag.StringVar(&o.compare, "compare", "", "a second sandboxd binary, run in each Poisson phase right after -binary (A/B)")
	flag.IntVar(&o.conc, "concurrency", 8, "callers of the ceiling, saturation and kills runs")
	flag.IntVar(&o.killRounds, "kill-rounds", 12, "rounds of the kills phase, per pool setting (each round is one of every kill case)")
	flag.BoolVar(&o.killsOnly, "kills-only", false, "run only the kills phase")
	flag.StringVar(&o.dataImage, "data-image", "sandbox-python-data:3.11", "the data environment's image")
	flag.DurationVar(&o.dataGap, "data-gap", time.Second, "pause, once the data pool has an idle container, before each sparse data run")
	flag.BoolVar(&o.dataOnly, "data-only", false, "run only the data phase")
	flag.IntVar(&o.sessionRounds, "session-rounds", 3, "rounds of the sessions phase's pandas analysis, each way")
	flag.BoolVar(&o.sessionsOnly, "sessions-only", false, "run only the sessions phase")
	flag.BoolVar(&o.fleetOnly, "fleet-only", false, "run only the fleet phase: a session's call direct and forwarded by another replica (needs PostgreSQL: make postgres)")
	flag.IntVar(&o.fleetCalls, "fleet-calls", 200, "calls of the fleet phase, each way")
	flag.BoolVar(&o.channelsOnly, "channels-only", false, "run only the channels phase: free, exact and voucher calls on anvil (needs make interop-deps)")
	flag.DurationVar(&o.blockTime, "block-time", 2*time.Second, "the channels phase's anvil block time (Base's is 2 s)")
	flag.IntVar(&o.channelCalls, "channel-calls", 31, "calls of each row of the channels phase (a p50 of 15 moved by a few ms with the host's pace)")
	flag.IntVar(&o.gasCalls, "gas-calls", 20, "voucher calls on the channel whose deposit, claim and sweep the gas row sums")
	flag.BoolVar(&o.languagesOnly, "languages-only", false, "run only the languages phase: hello worlds and session calls of each language")
	flag.StringVar(&o.nodeImage, "node-image", "sandbox-node:24", "the node environment's image (JavaScript, TypeScript, Bash)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, &o); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// report collects every figure for the final table.
type report struct {
	// ceiling and ceilingNet are engine cycles a second, with
	// NetworkDisabled as the service sets it and with it off. ceiling is
	// the mean of ceilingBefore (the run's first phase, beside ceilingNet)
	// and ceilingAfter (right after saturation).
	ceiling, ceilingNet         float64
	ceilingBefore, ceilingAfter float64
	// ceilingRuns are the runs before and after saturation, whose CPU per
	// cycle the CPU table sets beside saturation's per answer.
	ceilingRuns []ceilingRun
	dockerRun   latencies
	sparse      phase
	saturation  phase
	cpu         cpuSplit
	// interleaved is saturation taken in turns with the ceiling.
	interleaved interleaved
	// poisson holds, for each of tailShares, the Poisson phase of each
	// binary measured (-binary, then -compare).
	poisson   [][]phase
	kills     []killsPhase
	data      dataReport
	sessions  sessionsReport
	channels  channelsReport
	languages languagesReport
}

func run(ctx context.Context, o *options) error {
	var r report
	var err error
	switch {
	case o.killsOnly:
		return runOnly("kills", func() (err error) { r.kills, err = measureAllKills(ctx, o); return err },
			func(w io.Writer) { killsTable(w, *o, r.kills) })
	case o.dataOnly:
		return runOnly("data", func() (err error) { r.data, err = measureData(ctx, o); return err },
			func(w io.Writer) { dataTable(w, *o, r.data) })
	case o.tailOnly:
		return runOnly("tail", func() error { return measureTail(ctx, o, &r, true) },
			func(w io.Writer) {
				tailTable(w, *o, r)
				fmt.Fprintln(w)
				cpuTable(w, r.cpu, r.saturation.ok, r.ceilingRuns)
			})
	case o.fleetOnly:
		var fr fleetReport
		return runOnly("fleet", func() (err error) { fr, err = measureFleet(ctx, o, o.fleetCalls); return err },
			func(w io.Writer) { fleetTable(w, fr) })
	case o.sessionsOnly:
		return runOnly("sessions", func() (err error) { r.sessions, err = measureSessions(ctx, o, 0); return err },
			func(w io.Writer) { sessionsTable(w, *o, r.sessions) })
	case o.languagesOnly:
		return runOnly("languages", func() (err error) { r.languages, err = measureLanguages(ctx, o, 0); return err },
			func(w io.Writer) { languagesTable(w, *o, r.languages) })
	case o.channelsOnly:
		return runOnly("channels", func() (err error) { r.channels, err = measureChannels(ctx, o); return err },
			func(w io.Writer) { channelsTable(w, *o, r.channels) })
	}
	if err := measureTail(ctx, o, &r, false); err != nil {
		return err
	}
	if r.kills, err = measureAllKills(ctx, o); err != nil {
		return err
	}
	if r.data, err = measureData(ctx, o); err != nil {
		return err
	}
	if r.sessions, err = measureSessions(ctx, o, r.ceiling); err != nil {
		return err
	}
	if r.languages, err = measureLanguages(ctx, o, r.ceiling); err != nil {
		return err
	}
	if r.channels, err = measureChannels(ctx, o); err != nil {
		return err
	}
	printReport(os.Stdout, *o, r)
	return nil
}

// runOnly runs one phase alone (measure) and prints its table under a
// title naming it.
func runOnly(what string, measure func() error, table func(io.Writer)) error {
	if err := measure(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "## make bench (%s only), %s\n", what, machine())
	table(os.Stdout)
	return nil
}

// measureAllKills runs the kills phase with the pool of config.yaml and
// without a pool.
func measureAllKills(ctx context.Context, o *options) ([]killsPhase, error) {
	var all []killsPhase
	for _, pool := range []int{4, 0} {
		progress("service: kills under load, pool %d, %d callers, %d rounds, a CPU hog beside", pool, o.conc, o.killRounds)
		kp, err := measureKills(ctx, o, pool, o.killRounds)
		if err != nil {
			return nil, err
		}
		all = append(all, kp)
	}
	return all, nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

// machine describes where the figures were taken.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				model = strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
				break
			}
		}
	}
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = ", load average at the end " + strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return fmt.Sprintf("%d cores (%s), %s, %s%s", goruntime.NumCPU(), model, goruntime.Version(),
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), load)
}
