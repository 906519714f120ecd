// Package metrics exposes the service's Prometheus series. It wraps the
// seams of package sandboxd (the runner, the admitter, the payment gate)
// and takes observer funcs from runtime and payments, so that none of those
// packages imports Prometheus.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Payment outcomes, the values of sandboxd_payments_total's outcome label.
const (
	OutcomeQuoted   = "quoted"
	OutcomeRefused  = "refused"
	OutcomeReserved = "reserved"
	OutcomeSettled  = "settled"
	OutcomeFailed   = "failed"
	OutcomeReleased = "released"
	OutcomePending  = "pending"
	// OutcomeRefunded is a channel refund carried out (a payment
	// operation: nothing ran).
	OutcomeRefunded = "refunded"
)

// Metrics holds the service's series in its own registry.
type Metrics struct {
	reg *prometheus.Registry

	runs          *prometheus.CounterVec
	runDuration   prometheus.Histogram
	queueWait     prometheus.Histogram
	busy          prometheus.Counter
	engineErrors  *prometheus.CounterVec
	engineStart   prometheus.Histogram
	payments      *prometheus.CounterVec
	settleLatency prometheus.Histogram
	ledgerLatency *prometheus.HistogramVec
	settledAmount prometheus.Counter
	phases        *prometheus.HistogramVec
	sessions      sessionSeries
	channels      channelSeries
	retries       *retrySeries
}

// PoolStats is what the pool gauges read at each scrape. It has the fields
// of runtime.PoolStats, which cmd/sandboxd converts to it: a field added to
// one and not the other breaks that build instead of a series.
type PoolStats struct {
	Target, Idle, Starting int
	Hits, Misses           int64
	Started, Retired       int64
}

// runBuckets cover a warm start (ms) to the longest allowed run (5 m).
var runBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// phaseBuckets resolve the phases of an answer from a fraction of a
// millisecond to half a second finely (the tail under load), and
// a start of a busy engine beyond.
var phaseBuckets = []float64{.0005, .001, .002, .003, .005, .0075, .01, .015, .02, .03, .05, .075,
	.1, .15, .2, .3, .5, 1, 2.5, 5, 10, 30}

// New registers every series, with the pool read through pool (nil: no
// pool series) and the Go and process collectors.
func New(pool func() PoolStats) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sandboxd_runs_total",
		Help: "Runs by status: ok, error, timeout, oom, output_limit (delivered), or unavailable, internal, canceled (not delivered); " +
			"and by environment."}, []string{"status", "environment"})
	m.runDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sandboxd_run_duration_seconds",
		Help: "Wall time of delivered runs, container acquisition included.", Buckets: runBuckets})
	m.queueWait = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sandboxd_queue_wait_seconds",
		Help: "Time a request waited for a sandbox slot (admitted or not).", Buckets: prometheus.ExponentialBuckets(0.001, 4, 8)})
	m.busy = prometheus.NewCounter(prometheus.CounterOpts{Name: "sandboxd_busy_rejections_total",
		Help: "Requests answered 429 because every sandbox stayed busy for the queue wait."})
	m.engineErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sandboxd_engine_errors_total",
		Help: "Failed container engine API calls, by operation."}, []string{"op"})
	m.engineStart = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sandboxd_engine_start_seconds",
		Help: "Time to create and start one container.", Buckets: prometheus.ExponentialBuckets(0.025, 2, 10)})
	m.payments = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sandboxd_payments_total",
		Help: "Payment events by outcome (quoted, refused, reserved, settled, failed, released, pending) and reason (refused only)."},
		[]string{"outcome", "reason"})
	m.settleLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sandboxd_settlement_duration_seconds",
		Help: "Time to settle a payment, ledger writes included.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 13)})
	m.ledgerLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sandboxd_ledger_write_duration_seconds",
		Help: "Time of one ledger write, by operation.", Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 10)}, []string{"op"})
	m.settledAmount = prometheus.NewCounter(prometheus.CounterOpts{Name: "sandboxd_settled_amount_atomic_total",
		Help: "Sum of settled payments in the asset's atomic units (1e-6 USDC)."})
	m.phases = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sandboxd_phase_seconds",
		Help: "Time answers of POST /v1/code and the MCP tool spent in each phase: read, payment, admit, " +
			"take (an idle warm container), take_wait (one already starting), start (one of the run's own), " +
			"handover, program, demux, settle, write (HTTP only), replay (a retry answered from its kept answer).", Buckets: phaseBuckets}, []string{"phase"})
	for _, c := range []prometheus.Collector{m.runs, m.runDuration, m.queueWait, m.busy, m.engineErrors,
		m.engineStart, m.payments, m.settleLatency, m.ledgerLatency, m.settledAmount, m.phases,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	for _, o := range []string{OutcomeQuoted, OutcomeReserved, OutcomeSettled, OutcomeFailed, OutcomeReleased, OutcomePending} {
		m.payments.WithLabelValues(o, "")
	}
	m.registerSessions()
	m.registerChannels()
	m.registerRetries()
	if pool != nil {
		m.registerPool(pool)
	}
	return m
}

// registerPool adds the pool's gauges and counters, read at each scrape.
func (m *Metrics) registerPool(pool func() PoolStats) {
	gauge := func(name, help string, v func(PoolStats) float64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return v(pool()) }))
	}
	counter := func(name, help string, v func(PoolStats) float64) {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return v(pool()) }))
	}
	gauge("sandboxd_pool_target_containers", "Containers (idle and starting) the warm pool holds now: it follows the load between runtime.pool_size and runtime.pool_max.",
		func(s PoolStats) float64 { return float64(s.Target) })
	gauge("sandboxd_pool_idle_containers", "Containers waiting for a program.",
		func(s PoolStats) float64 { return float64(s.Idle) })
	gauge("sandboxd_pool_starting_containers", "Containers being created for the pool.",
		func(s PoolStats) float64 { return float64(s.Starting) })
	counter("sandboxd_pool_hits_total", "Runs served by a warm container (idle, or starting when the run came).",
		func(s PoolStats) float64 { return float64(s.Hits) })
	counter("sandboxd_pool_misses_total", "Runs that started a container of their own: the pool had none idle or starting for them.",
		func(s PoolStats) float64 { return float64(s.Misses) })
	counter("sandboxd_pool_started_total", "Containers the warm pool started.",
		func(s PoolStats) float64 { return float64(s.Started) })
	counter("sandboxd_pool_retired_total", "Idle containers the warm pool removed unused, beyond the largest target of the last 30 s: "+
		"each cost a start and a removal, as much CPU as an answer.",
		func(s PoolStats) float64 { return float64(s.Retired) })
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Engine is the runtime's observer: a failed engine call (err set) or a
// container start's latency (op "start").
func (m *Metrics) Engine(op string, d time.Duration, err error) {
	if err != nil {
		m.engineErrors.WithLabelValues(op).Inc()
		return
	}
	m.engineStart.Observe(d.Seconds())
}

// Ledger is the payments ledger's observer: one write's latency.
func (m *Metrics) Ledger(op string, d time.Duration) {
	m.ledgerLatency.WithLabelValues(op).Observe(d.Seconds())
}
