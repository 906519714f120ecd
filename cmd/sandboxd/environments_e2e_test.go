package main

import (
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandboxd/internal/servicetest"
	"sandboxd/internal/testenv"
)

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
	s := startService(t, instance, noPool) // data's pool of one is the only container
	waitFor(t, 60*time.Second, "data's warm container", func() bool { return len(servicetest.ContainersOf(t, instance)) > 0 })
	_ = s.Cmd.Process.Signal(syscall.SIGKILL)
	s.waitExit(t, 10*time.Second)
	if len(servicetest.ContainersOf(t, instance)) == 0 {
		t.Fatal("a SIGKILLed service left no container; the test proves nothing")
	}
	startService(t, instance, noPool, noData)
	if left := servicetest.ContainersOf(t, instance); len(left) != 0 {
		t.Fatalf("leftovers of the data environment not removed at start: %v", left)
	}
}
