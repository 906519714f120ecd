package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"sandboxd"
	"sandboxd/payments/retries"
)

// retrySeries are the series of the answers kept for retries
// (docs/design/retries.md §7.3); it is the keeper's retries.Observer.
type retrySeries struct {
	replays    *prometheus.CounterVec
	replayWait prometheus.Histogram
	lookups    *prometheus.CounterVec
	lookupTime prometheus.Histogram
	kept       *prometheus.CounterVec
	evicted    *prometheus.CounterVec
	sweeps     *prometheus.CounterVec
	bytes      prometheus.Gauge
}

var _ retries.Observer = (*retrySeries)(nil)

// replayOutcomes are the outcomes of a retry (retries.Outcome*).
var replayOutcomes = []string{retries.OutcomeAnswered, retries.OutcomePending, retries.OutcomeGone,
	retries.OutcomeInProgress, retries.OutcomeNotDelivered, retries.OutcomeConflict, retries.OutcomeBusy,
	retries.OutcomeFailed}

// The label values of the sweep's counters.
const (
	keptKept, keptTooLarge        = "kept", "too_large"
	evictedExpired, evictedBudget = "expired", "budget"
	sweepOK, sweepFailed          = "ok", "failed"
)

// registerRetries adds the retries' series, every label value shown from
// the start.
func (m *Metrics) registerRetries() {
	s := &retrySeries{
		replays: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sandboxd_replays_total",
			Help: "Retries of paid requests recognised, by proof (payment: the same signed payment; id: a new one " +
				"with the same payment id) and outcome: answered, pending (202), gone (410: the bytes were not kept), " +
				"in_progress, not_delivered, conflict (409), busy (429: too many waiting), failed."},
			[]string{"by", "outcome"}),
		replayWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sandboxd_replay_wait_seconds",
			Help:    "Time a retry waited for its first request and read the stored answer.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9)}),
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sandboxd_answer_lookups_total",
			Help: "Ledger lookups of a verified payment's kept answer, by whether one was found (yes, no)."},
			[]string{"found"}),
		lookupTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sandboxd_answer_lookup_seconds",
			Help: "Time of one lookup of a kept answer.", Buckets: prometheus.ExponentialBuckets(0.0002, 2.5, 10)}),
		kept: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sandboxd_answers_kept_total",
			Help: "Paid answers stored by their settlement, by outcome: kept, too_large (over " +
				"payments.retries.max_answer_bytes: the settlement is kept, the bytes not)."}, []string{"outcome"}),
		evicted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sandboxd_answers_evicted_total",
			Help: "Kept answers let go by this replica's sweeps, by why: expired (the row deleted), budget (its " +
				"bytes dropped to keep the ledger under payments.retries.max_bytes)."}, []string{"why"}),
		sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sandboxd_answer_sweeps_total",
			Help: "Sweeps of the kept answers by this replica, by outcome: ok, failed (the ledger could not be " +
				"written; the answers grow until a pass succeeds)."}, []string{"outcome"}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sandboxd_answers_bytes",
			Help: "Bytes of the answers kept in the ledger after the last sweep (the fleet's: every replica reads " +
				"the same ledger, take the max, not the sum)."}),
	}
	m.reg.MustRegister(s.replays, s.replayWait, s.lookups, s.lookupTime, s.kept, s.evicted, s.sweeps, s.bytes)
	for _, by := range []string{sandboxd.ReplayByPayment, sandboxd.ReplayByID} {
		for _, o := range replayOutcomes {
			s.replays.WithLabelValues(by, o)
		}
	}
	s.lookups.WithLabelValues("yes")
	s.lookups.WithLabelValues("no")
	s.kept.WithLabelValues(keptKept)
	s.kept.WithLabelValues(keptTooLarge)
	s.evicted.WithLabelValues(evictedExpired)
	s.evicted.WithLabelValues(evictedBudget)
	s.sweeps.WithLabelValues(sweepOK)
	s.sweeps.WithLabelValues(sweepFailed)
	m.retries = s
}

// Retries is the observer of the keeper of answers (retries.Options).
func (m *Metrics) Retries() retries.Observer { return m.retries }

// Lookup counts one lookup, found or not, and times it.
func (s *retrySeries) Lookup(found bool, d time.Duration) {
	label := "no"
	if found {
		label = "yes"
	}
	s.lookups.WithLabelValues(label).Inc()
	s.lookupTime.Observe(d.Seconds())
}

// Replay counts one retry by proof and outcome, and times its wait.
func (s *retrySeries) Replay(by, outcome string, d time.Duration) {
	s.replays.WithLabelValues(by, outcome).Inc()
	s.replayWait.Observe(d.Seconds())
}

// Kept counts one answer stored, its bytes kept or not.
func (s *retrySeries) Kept(kept bool) {
	label := keptTooLarge
	if kept {
		label = keptKept
	}
	s.kept.WithLabelValues(label).Inc()
}

// Swept counts one sweep pass and what it let go, and shows the bytes it
// left. Its time is the ledger's (sandboxd_ledger_write_duration_seconds,
// op answer_sweep).
func (s *retrySeries) Swept(r retries.SweepReport, _ time.Duration, err error) {
	if err != nil {
		s.sweeps.WithLabelValues(sweepFailed).Inc()
		return
	}
	s.sweeps.WithLabelValues(sweepOK).Inc()
	s.evicted.WithLabelValues(evictedExpired).Add(float64(r.Expired))
	s.evicted.WithLabelValues(evictedBudget).Add(float64(r.Evicted))
	s.bytes.Set(float64(r.Bytes))
}
