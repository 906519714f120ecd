package main

import (
	"net/http"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"sandboxd/internal/testenv"
)

// TestServeMetrics: GET /metrics answers on server.metrics_addr in the
// Prometheus text format (checked by the official parser) and counts a
// run; the public listener does not serve it.
func TestServeMetrics(t *testing.T) {
	testenv.RequireIntegration(t)
	s := startService(t, uniqueInstance(t))
	if status, a, _ := s.post(t, "print(1)"); status != 200 || a.Status != "ok" {
		t.Fatalf("run: %d %+v", status, a)
	}
	base := s.MetricsURL()
	if base == "" {
		t.Fatalf("no metrics listener logged\n%s", s.Log())
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the official parser refuses /metrics: %v", err)
	}
	runs := families["sandboxd_runs_total"]
	ok := 0.0
	for _, m := range runs.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "status" && l.GetValue() == "ok" {
				ok = m.GetCounter().GetValue()
			}
		}
	}
	if ok != 1 {
		t.Fatalf("sandboxd_runs_total{status=\"ok\"} = %v, want 1", ok)
	}
	for _, name := range []string{"sandboxd_run_duration_seconds", "sandboxd_queue_wait_seconds",
		"sandboxd_pool_idle_containers", "sandboxd_engine_start_seconds"} {
		if families[name] == nil {
			t.Errorf("series %s missing", name)
		}
	}
	// Payments are off: a free run is no payment.
	for _, m := range families["sandboxd_payments_total"].GetMetric() {
		if v := m.GetCounter().GetValue(); v != 0 {
			t.Errorf("payments off, yet sandboxd_payments_total%v = %v", m.GetLabel(), v)
		}
	}
	pub, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	pub.Body.Close()
	if pub.StatusCode != http.StatusNotFound {
		t.Fatalf("public listener /metrics: %d, want 404", pub.StatusCode)
	}
}
