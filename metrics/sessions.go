package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"sandboxd"
	"sandboxd/payments/ledger"
	"sandboxd/sessions"
)

// sessionSeries are the sessions' series.
type sessionSeries struct {
	open   *prometheus.GaugeVec
	opened *prometheus.CounterVec
	ended  *prometheus.CounterVec
	calls  *prometheus.CounterVec
	// fleet is the fleet's open sessions by replica, from the registry.
	fleet *prometheus.GaugeVec
}

// registerSessions adds the sessions' series, every end reason shown
// from the start.
func (m *Metrics) registerSessions() {
	m.sessions = sessionSeries{
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sandboxd_sessions_open",
			Help: "Sessions open now, by environment."}, []string{"environment"}),
		opened: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sandboxd_sessions_opened_total",
			Help: "Sessions opened, by environment."}, []string{"environment"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sandboxd_sessions_ended_total",
			Help: "Sessions ended, by reason: closed, idle, lifetime, ended_by_program, interrupt, output_between_calls, shutdown, failed."},
			[]string{"reason"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sandboxd_session_calls_total",
			Help: "Calls in sessions by environment and status: ok, error, timeout, oom, output_limit (delivered), or unavailable, internal, canceled (not delivered)."},
			[]string{"environment", "status"}),
		fleet: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sandboxd_fleet_sessions",
			Help: "Sessions open in the whole fleet, by the replica that holds them and environment, from the ledger's registry (refreshed every lease/3; absent on a single host)."},
			[]string{"replica", "environment"}),
	}
	m.reg.MustRegister(m.sessions.open, m.sessions.opened, m.sessions.ended, m.sessions.calls, m.sessions.fleet)
	for _, r := range sessions.Reasons {
		m.sessions.ended.WithLabelValues(r)
	}
}

var _ sessions.Observer = (*Metrics)(nil)

// SessionOpened counts a session opened in environment.
func (m *Metrics) SessionOpened(environment string) {
	m.sessions.open.WithLabelValues(environment).Inc()
	m.sessions.opened.WithLabelValues(environment).Inc()
}

// SessionEnded counts a session of environment ended for reason.
func (m *Metrics) SessionEnded(environment, reason string) {
	m.sessions.open.WithLabelValues(environment).Dec()
	m.sessions.ended.WithLabelValues(reason).Inc()
}

// SessionCalled counts a call in environment, by its status or, when the
// service failed to deliver it, err's.
func (m *Metrics) SessionCalled(environment string, status sandboxd.Status, err error) {
	label := string(status)
	if err != nil {
		label = errorStatus(err)
	}
	m.sessions.calls.WithLabelValues(environment, label).Inc()
}

// FleetSessions shows the fleet's open sessions, as the registry lists
// them; a replica with none left drops out.
func (m *Metrics) FleetSessions(open []ledger.ReplicaSessions) {
	m.sessions.fleet.Reset()
	for _, o := range open {
		m.sessions.fleet.WithLabelValues(o.Replica, o.Environment).Set(float64(o.Open))
	}
}
