package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"sandboxd"
)

type fakeRunner struct {
	sandboxd.Runner
	res sandboxd.Result
	err error
}

func (f fakeRunner) Run(context.Context, sandboxd.Job) (sandboxd.Result, error) { return f.res, f.err }

type fakeAdmitter struct{ err error }

func (f fakeAdmitter) Admit(context.Context) (func(), error) { return func() {}, f.err }

type fakeGate struct {
	err       error
	settleErr error
}

func (f fakeGate) Check(context.Context, sandboxd.PaymentRequest) (sandboxd.Authorization, error) {
	if f.err != nil {
		return nil, f.err
	}
	return fakeCharge{f.settleErr}, nil
}

// fakeCharge is both the fake authorization and the fake charge.
type fakeCharge struct{ settleErr error }

func (fakeCharge) Payer() string                                      { return "0xpayer" }
func (c fakeCharge) Reserve(context.Context) (sandboxd.Charge, error) { return c, nil }
func (c fakeCharge) Settle(context.Context, sandboxd.Delivered) (*sandboxd.Settlement, error) {
	return nil, c.settleErr
}
func (fakeCharge) Release(context.Context) {}

// begin checks and reserves a payment through g.
func begin(ctx context.Context, g Gate, req sandboxd.PaymentRequest) (sandboxd.Charge, error) {
	a, err := g.Check(ctx, req)
	if err != nil {
		return nil, err
	}
	return a.Reserve(ctx)
}

// scrape parses the handler's answer with the official text parser.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the official parser refuses the output: %v", err)
	}
	return fams
}

// value returns the value of the series of family name whose labels
// include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	for _, m := range fams[name].GetMetric() {
		n := 0
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				n++
			}
		}
		if n != len(want) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

// TestMetricsSeries drives every wrapper and observer and checks each
// series by its Prometheus name after a scrape.
func TestMetricsSeries(t *testing.T) {
	ctx := context.Background()
	m := New(func() PoolStats {
		return PoolStats{Target: 4, Idle: 3, Starting: 1, Hits: 7, Misses: 2, Started: 12, Retired: 1}
	})
	run := Runner{Runner: fakeRunner{res: sandboxd.Result{Status: "ok"}}, M: m}
	if _, err := run.Run(ctx, sandboxd.Job{Environment: "data"}); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Run(ctx, sandboxd.Job{}); err != nil {
		t.Fatal(err)
	}
	down := Runner{Runner: fakeRunner{err: sandboxd.Errorf(sandboxd.CodeUnavailable, "t", "down")}, M: m}
	_, _ = down.Run(ctx, sandboxd.Job{})
	_, _ = Admitter{Admitter: fakeAdmitter{}, M: m}.Admit(ctx)
	_, _ = Admitter{Admitter: fakeAdmitter{err: sandboxd.Errorf(sandboxd.CodeBusy, "t", "busy")}, M: m}.Admit(ctx)
	m.Engine("runtime.create", 0, errors.New("boom"))
	m.Engine("start", 80*time.Millisecond, nil)
	m.Ledger("reserve", time.Millisecond)

	paid := sandboxd.PaymentRequest{Signature: "x"}
	g := Gate{PaymentGate: fakeGate{}, M: m, Amount: func(sandboxd.PaymentRequest) float64 { return 5000 }}
	c, err := begin(ctx, g, paid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); err != nil {
		t.Fatal(err)
	}
	c, _ = begin(ctx, g, paid)
	c.Release(ctx)
	pending := Gate{PaymentGate: fakeGate{settleErr: sandboxd.Errorf(sandboxd.CodePending, "t", "pending")}, M: m}
	c, _ = begin(ctx, pending, paid)
	_, _ = c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}})
	refuse := Gate{PaymentGate: fakeGate{err: sandboxd.Errorf(sandboxd.CodePayment, "t", "no")}, M: m,
		Reason: func(error) string { return "invalid_exact_evm_payload_signature" }}
	_, _ = begin(ctx, refuse, sandboxd.PaymentRequest{})
	_, _ = begin(ctx, refuse, paid)

	fams := scrape(t, m)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"sandboxd_runs_total", map[string]string{"status": "ok", "environment": "python"}, 1},
		{"sandboxd_runs_total", map[string]string{"status": "ok", "environment": "data"}, 1},
		{"sandboxd_runs_total", map[string]string{"status": "unavailable", "environment": "python"}, 1},
		{"sandboxd_run_duration_seconds", nil, 2},
		{"sandboxd_queue_wait_seconds", nil, 2},
		{"sandboxd_busy_rejections_total", nil, 1},
		{"sandboxd_engine_errors_total", map[string]string{"op": "runtime.create"}, 1},
		{"sandboxd_engine_start_seconds", nil, 1},
		{"sandboxd_ledger_write_duration_seconds", map[string]string{"op": "reserve"}, 1},
		{"sandboxd_pool_idle_containers", nil, 3},
		{"sandboxd_pool_target_containers", nil, 4},
		{"sandboxd_pool_hits_total", nil, 7},
		{"sandboxd_pool_misses_total", nil, 2},
		{"sandboxd_pool_started_total", nil, 12},
		{"sandboxd_pool_retired_total", nil, 1},
		{"sandboxd_payments_total", map[string]string{"outcome": "reserved"}, 3},
		{"sandboxd_payments_total", map[string]string{"outcome": "settled"}, 1},
		{"sandboxd_payments_total", map[string]string{"outcome": "released"}, 1},
		{"sandboxd_payments_total", map[string]string{"outcome": "quoted"}, 1},
		{"sandboxd_payments_total", map[string]string{"outcome": "refused", "reason": "invalid_exact_evm_payload_signature"}, 1},
		{"sandboxd_payments_total", map[string]string{"outcome": "pending"}, 1},
		{"sandboxd_settlement_duration_seconds", nil, 2},
		{"sandboxd_settled_amount_atomic_total", nil, 5000},
	} {
		if got := value(fams, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}

// TestSettledAmountIsTheEnvironmentsPrice: a settled payment adds the
// price of the environment its call named.
func TestSettledAmountIsTheEnvironmentsPrice(t *testing.T) {
	ctx := context.Background()
	m := New(func() PoolStats { return PoolStats{} })
	g := Gate{PaymentGate: fakeGate{}, M: m, Amount: func(req sandboxd.PaymentRequest) float64 {
		if req.Environment == "data" {
			return 20000
		}
		return 5000
	}}
	for _, env := range []string{"", "data"} {
		c, err := begin(ctx, g, sandboxd.PaymentRequest{Signature: "x", Environment: env})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := value(scrape(t, m), "sandboxd_settled_amount_atomic_total", nil); got != 25000 {
		t.Fatalf("settled %v, want 5000 + 20000", got)
	}
}

// TestSessionSeries: opened, open, ended by reason (every reason shown
// from the start) and calls by status.
func TestSessionSeries(t *testing.T) {
	m := New(nil)
	m.SessionOpened("python")
	m.SessionOpened("data")
	m.SessionCalled("python", sandboxd.StatusOK, nil)
	m.SessionCalled("python", "", sandboxd.Errorf(sandboxd.CodeUnavailable, "x", "down"))
	m.SessionEnded("data", "idle")
	got := scrape(t, m)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"sandboxd_sessions_opened_total", map[string]string{"environment": "python"}, 1},
		{"sandboxd_sessions_open", map[string]string{"environment": "python"}, 1},
		{"sandboxd_sessions_open", map[string]string{"environment": "data"}, 0},
		{"sandboxd_sessions_ended_total", map[string]string{"reason": "idle"}, 1},
		{"sandboxd_sessions_ended_total", map[string]string{"reason": "output_between_calls"}, 0},
		{"sandboxd_session_calls_total", map[string]string{"environment": "python", "status": "ok"}, 1},
		{"sandboxd_session_calls_total", map[string]string{"environment": "python", "status": "unavailable"}, 1},
	} {
		if v := value(got, c.name, c.labels); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
	if _, ok := got["sandboxd_sessions_ended_total"]; !ok {
		t.Fatal("no ended series")
	}
}

// TestPhaseHistogram: every phase handed to Phase is a sample of
// sandboxd_phase_seconds under its phase label, in buckets fine enough to
// tell 1 ms from 2 ms and 250 ms from 500 ms.
func TestPhaseHistogram(t *testing.T) {
	m := New(nil)
	m.Phase(sandboxd.PhaseTakeWait, 40*time.Millisecond)
	m.Phase(sandboxd.PhaseTakeWait, 300*time.Millisecond)
	m.Phase(sandboxd.PhaseProgram, 3*time.Millisecond)
	fams := scrape(t, m)
	if got := value(fams, "sandboxd_phase_seconds", map[string]string{"phase": "take_wait"}); got != 2 {
		t.Errorf("take_wait samples = %v, want 2", got)
	}
	if got := value(fams, "sandboxd_phase_seconds", map[string]string{"phase": "program"}); got != 1 {
		t.Errorf("program samples = %v, want 1", got)
	}
	var bounds []float64
	for _, b := range fams["sandboxd_phase_seconds"].GetMetric()[0].GetHistogram().GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	for _, want := range []float64{.001, .002, .01, .1, .25, .5} {
		lo, hi := -1.0, -1.0
		for _, b := range bounds {
			if b <= want {
				lo = b
			}
			if b >= want && hi < 0 {
				hi = b
			}
		}
		if lo < 0 || hi < 0 || hi > 2*want || lo < want/2 {
			t.Errorf("no bucket bound within 2× of %v s: %v", want, bounds)
		}
	}
}

// fakeReplay is a gate's Replay: a retry answered from its stored answer.
type fakeReplay struct{ fakeCharge }

func (fakeReplay) By() string { return sandboxd.ReplayByPayment }
func (fakeReplay) Answer(context.Context) (*sandboxd.StoredAnswer, error) {
	return &sandboxd.StoredAnswer{Status: http.StatusOK}, nil
}

// replayGate answers every Check with auth.
type replayGate struct{ auth sandboxd.Authorization }

func (g replayGate) Check(context.Context, sandboxd.PaymentRequest) (sandboxd.Authorization, error) {
	return g.auth, nil
}

// TestGatePassesReplays: a Replay comes out of the wrapped Check as a Replay (the flows
// answer it by its type; wrapped, it went on to Reserve and a 500), and a replay-only
// probe's nil as nil; neither is counted as a reservation or a refusal.
func TestGatePassesReplays(t *testing.T) {
	m := New(func() PoolStats { return PoolStats{} })
	g := Gate{PaymentGate: replayGate{auth: fakeReplay{}}, M: m}
	a, err := g.Check(context.Background(), sandboxd.PaymentRequest{Signature: "x"})
	if _, ok := a.(sandboxd.Replay); !ok || err != nil {
		t.Fatalf("Check = %T, %v; want the Replay", a, err)
	}
	g.PaymentGate = replayGate{}
	if a, err := g.Check(context.Background(), sandboxd.PaymentRequest{Signature: "x", ReplayOnly: true}); a != nil || err != nil {
		t.Fatalf("a probe finding nothing: Check = %#v, %v; want nil, nil", a, err)
	}
	for _, c := range scrape(t, m)["sandboxd_payments_total"].GetMetric() {
		if c.GetCounter().GetValue() != 0 {
			t.Errorf("replays counted as payments: %v", c)
		}
	}
}
