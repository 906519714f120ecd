package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandboxd/internal/servicetest"
	"sandboxd/internal/testenv"
	"sandboxd/x402"
)

// TestEnvironmentsOverHTTP: "environment" picks the image a program runs
// in (data has numpy, python does not), echoed in the answer.
func TestEnvironmentsOverHTTP(t *testing.T) {
	testenv.RequireIntegration(t)
	s := startService(t, uniqueInstance(t), noPool)
	code := "import importlib.util; print(importlib.util.find_spec('numpy') is not None)"
	for env, want := range map[string]string{"": "False\n", "python": "False\n", "data": "True\n"} {
		status, a, _, err := s.sendBody(map[string]string{"code": code, "environment": env})
		if err != nil || status != 200 || a.Stdout != want {
			t.Fatalf("environment %q: %d %+v %v, want %q", env, status, a, err, want)
		}
	}
}

// TestThe402QuotesEachEnvironmentsPrice: with payments on and data priced
// apart, an unpaid call quotes the price of the environment it names.
func TestThe402QuotesEachEnvironmentsPrice(t *testing.T) {
	testenv.RequireIntegration(t)
	s := startService(t, uniqueInstance(t), noPool, "SANDBOX_ENVIRONMENTS_DATA_PRICE=0.02",
		"SANDBOX_PAYMENTS_ENABLED=true", "SANDBOX_PAYMENTS_PAY_TO=0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
		"SANDBOX_PAYMENTS_FACILITATOR_URL=http://127.0.0.1:9", // never reached: nothing is paid
		"SANDBOX_PAYMENTS_LEDGER="+filepath.Join(t.TempDir(), "ledger.db"))
	for env, want := range map[string]string{"": "5000", "python": "5000", "data": "20000"} {
		status, _, h, err := s.sendBody(map[string]string{"code": "print(1)", "environment": env})
		if err != nil || status != http.StatusPaymentRequired {
			t.Fatalf("environment %q: %d %v, want 402", env, status, err)
		}
		raw, err := base64.StdEncoding.DecodeString(h.Get(x402.HeaderPaymentRequired))
		var terms x402.PaymentRequired
		if err != nil || json.Unmarshal(raw, &terms) != nil || len(terms.Accepts) != 1 || terms.Accepts[0].Amount != want {
			t.Fatalf("environment %q: terms %s (%v), want an amount of %s", env, raw, err, want)
		}
	}
}

// TestMissingDataImageLeavesPythonRunning: with the data environment's
// image missing, /v1/health answers 503 naming that environment and its
// image, while python's runs are answered as ever.
func TestMissingDataImageLeavesPythonRunning(t *testing.T) {
	testenv.RequireIntegration(t)
	s := startService(t, uniqueInstance(t), "SANDBOX_ENVIRONMENTS_DATA_IMAGE=sandbox-python:no-such-tag")
	resp, err := http.Get(s.URL + "/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable ||
		!strings.Contains(string(body), "environment data: image sandbox-python:no-such-tag is missing") ||
		strings.Contains(string(body), "environment python") {
		t.Fatalf("health: %d %s", resp.StatusCode, body)
	}
	for i := range 3 {
		if status, a, _ := s.post(t, "print(6*7)"); status != 200 || a.Stdout != "42\n" {
			t.Fatalf("python call %d with data's image missing: %d %+v", i, status, a)
		}
	}
}

// TestCrashLeftoversOfEveryEnvironmentAreRemoved: the warm containers of
// the data environment, left by a SIGKILLed service, are removed when it
// starts again, even with data turned off by then.
func TestCrashLeftoversOfEveryEnvironmentAreRemoved(t *testing.T) {
	testenv.RequireIntegration(t)
	instance := uniqueInstance(t)
	s := startService(t, instance, noPool, noNode) // data's pool of one is the only container
	// Running, so that no create is in flight when the service is killed
	// (one the daemon completes after the next start's Reap would be left).
	waitFor(t, 60*time.Second, "data's warm container", func() bool {
		left := servicetest.ContainersOf(t, instance)
		return len(left) == 1 && strings.HasSuffix(left[0], " running")
	})
	_ = s.Cmd.Process.Signal(syscall.SIGKILL)
	s.waitExit(t, 10*time.Second)
	if len(servicetest.ContainersOf(t, instance)) == 0 {
		t.Fatal("a SIGKILLed service left no container; the test proves nothing")
	}
	startService(t, instance, noPool, noData, noNode)
	if left := servicetest.ContainersOf(t, instance); len(left) != 0 {
		t.Fatalf("leftovers of the data environment not removed at start: %v", left)
	}
}
