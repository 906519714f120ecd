package main

import (
	"strings"
	"testing"
	"time"
)

// TestWriteDeadlineCoversAPaidRequest: the HTTP write
// deadline covers reading the body, the queue wait, the payment check, the
// run and the settlement, whatever they are set to; before, it was the run
// timeout plus 2 minutes, so a settle_timeout of 5 minutes charged the payer
// for an EOF.
func TestWriteDeadlineCoversAPaidRequest(t *testing.T) {
	cfg, err := LoadConfig(writeConfig(t, `runtime:
  timeout: 20s
  queue_wait: 30s
payments:
  enabled: true
  pay_to: "0x000000000000000000000000000000000000dEaD"
  settle_timeout: 5m
  verify_timeout: 30s
  check_wait: 20s
  max_timeout_seconds: 600
`))
	if err != nil {
		t.Fatal(err)
	}
	to := cfg.httpTimeouts()
	longest := to.Read + 30*time.Second + 20*time.Second + 30*time.Second + 20*time.Second + 5*time.Minute
	if to.Write < longest {
		t.Fatalf("write deadline %s, shorter than a paid request can take (%s)", to.Write, longest)
	}
	free := cfg
	free.Payments.Enabled = false
	if to := free.httpTimeouts(); to.Write < to.Read+30*time.Second+20*time.Second {
		t.Fatalf("free: write deadline %s", to.Write)
	}
}

// TestWindowMustFitMaxTimeout: a configuration whose
// max_timeout_seconds cannot cover the validity window a payment needs is
// refused at start, naming the keys.
func TestWindowMustFitMaxTimeout(t *testing.T) {
	_, err := LoadConfig(writeConfig(t, `runtime:
  timeout: 60s
payments:
  enabled: true
  pay_to: "0x000000000000000000000000000000000000dEaD"
  max_timeout_seconds: 120
`))
	if err == nil {
		t.Fatal("a 60 s run with max_timeout_seconds 120 and settle_timeout 60s was accepted")
	}
	for _, key := range []string{"payments.max_timeout_seconds", "runtime.timeout and its overhead (1m30s)", "payments.settle_timeout (1m0s)", "at least 175"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name %q", err, key)
		}
	}
}

// TestWindowCoversTheRunLimit: the validity window holds
// the run as long as it may go on before it is abandoned (runtime.timeout
// plus the run's overhead, the limit of the detached run), not only
// runtime.timeout; the window and the write deadline come from the same
// sum. Before, the window left out the 30 s overhead: a 30 s run with
// max_timeout_seconds 120 was accepted, and an authorization could expire
// before its settlement on a loaded host.
func TestWindowCoversTheRunLimit(t *testing.T) {
	_, err := LoadConfig(writeConfig(t, `runtime:
  timeout: 30s
payments:
  enabled: true
  pay_to: "0x000000000000000000000000000000000000dEaD"
  max_timeout_seconds: 120
`))
	if err == nil || !strings.Contains(err.Error(), "at least 145") {
		t.Fatalf("a 30 s run (abandoned after 60 s) with max_timeout_seconds 120: %v; want a refusal asking for 145", err)
	}
	cfg, err := LoadConfig(writeConfig(t, "payments:\n  enabled: true\n  pay_to: \"0x000000000000000000000000000000000000dEaD\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Payments
	flow := p.CheckWait + p.VerifyTimeout + cfg.Runtime.QueueWait + cfg.runLimit() + p.SettleTimeout
	if w := p.Window(cfg.runBounds()); w <= flow {
		t.Fatalf("window %s does not cover check, queue, the run up to its limit and the settlement (%s)", w, flow)
	}
	if b := cfg.requestBudget(); b <= flow {
		t.Fatalf("request budget %s does not cover %s", b, flow)
	}
}
