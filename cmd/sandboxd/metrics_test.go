package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"sandboxd"
	"sandboxd/internal/slots"
	"sandboxd/payments"
)

// TestMetricsListenerRefusesEveryInterface: whatever
// spelling gets past the configuration check ([::%lo] fails net.ParseIP,
// a host name may resolve to 0.0.0.0), the metrics listener that ends up
// bound to every interface is closed and the start refused; a loopback one
// is kept. Before, [::%lo]:9090 served /metrics on [::].
func TestMetricsListenerRefusesEveryInterface(t *testing.T) {
	for _, addr := range []string{"[::%lo]:0", "[::ffff:0.0.0.0]:0", "0.0.0.0:0"} {
		ln, err := listenPrivate(addr)
		if err == nil {
			ln.Close()
			t.Errorf("%s: listening on %s was accepted", addr, ln.Addr())
			continue
		}
		if !strings.Contains(err.Error(), "every interface") {
			t.Errorf("%s: %v does not say why", addr, err)
		}
	}
	ln, err := listenPrivate("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

// TestFreeModeCountsNoPayments: with payments off, free
// runs go through the instrumented free gate (check, reserve, settle) and
// /metrics shows no sandboxd_payments_total series above zero. Before,
// every free run counted as reserved and settled.
func TestFreeModeCountsNoPayments(t *testing.T) {
	ctx := context.Background()
	m := &Main{Config: defaultConfig()}
	m.metrics = m.newMetrics()
	_, _, gate := m.instrument(nil, slots.New(1, 0), payments.FreeGate{})
	for range 3 {
		a, err := gate.Check(ctx, sandboxd.PaymentRequest{ResourceURL: "http://x/v1/code"})
		if err != nil {
			t.Fatal(err)
		}
		c, err := a.Reserve(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}}); err != nil {
			t.Fatal(err)
		}
	}
	rec := httptest.NewRecorder()
	m.metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "sandboxd_payments_total{") && !strings.HasSuffix(line, " 0") {
			t.Errorf("payments off, yet %s", line)
		}
	}
}
