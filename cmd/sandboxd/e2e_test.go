package main

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandboxd/internal/servicetest"
	"sandboxd/internal/testenv"
)

func TestServeRunsPython(t *testing.T) {
	testenv.RequireIntegration(t)
	s := startService(t, uniqueInstance(t))
	status, a, _ := s.post(t, "print(6*7)")
	if status != 200 || a.Stdout != "42\n" || a.ExitCode != 0 || a.Status != "ok" || a.Lang != "python" {
		t.Fatalf("got %d %+v", status, a)
	}
	for _, path := range []string{"/v1/health", "/v1/version"} {
		resp, err := http.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		if path == "/v1/version" && !strings.Contains(string(body), `"image":"`+testenv.Image()+`"`) {
			t.Fatalf("version does not name the image: %s", body)
		}
	}
}

func TestCodeSizeLimitOverHTTP(t *testing.T) {
	testenv.RequireIntegration(t)
	s := startService(t, uniqueInstance(t), "SANDBOX_RUNTIME_MAX_CODE_BYTES=1000")
	prog := "print('ok')\n"
	atLimit := prog + "#" + strings.Repeat("x", 1000-len(prog)-1)
	if status, a, _ := s.post(t, atLimit); status != 200 || a.Stdout != "ok\n" {
		t.Fatalf("code at the limit: %d %+v", status, a)
	}
	if status, a, _ := s.post(t, atLimit+"x"); status != 413 || !strings.Contains(a.Error, "1000 bytes") {
		t.Fatalf("one byte over: %d %+v", status, a)
	}
}

func TestStdinAndUsageOverHTTP(t *testing.T) {
	testenv.RequireIntegration(t)
	s := startService(t, uniqueInstance(t), "SANDBOX_RUNTIME_MAX_STDIN_BYTES=100")
	code := "import sys\nprint(sys.stdin.read()[::-1])"
	status, a, _, err := s.sendBody(map[string]string{"code": code, "stdin": "olleh"})
	if err != nil || status != 200 || a.Stdout != "hello\n" {
		t.Fatalf("stdin: %d %+v %v", status, a, err)
	}
	if a.CPUMS == nil || a.MaxRSSKB == nil || *a.CPUMS >= 100 || *a.MaxRSSKB <= 0 {
		t.Fatalf("usage of a tiny program: cpu_ms %v max_rss_kb %v", a.CPUMS, a.MaxRSSKB)
	}
	if status, a, _, err := s.sendBody(map[string]string{"code": code}); err != nil || status != 200 || a.Stdout != "\n" {
		t.Fatalf("no stdin: %d %+v %v", status, a, err)
	}
	status, a, _, err = s.sendBody(map[string]string{"code": code, "stdin": strings.Repeat("x", 101)})
	if err != nil || status != 413 || !strings.Contains(a.Error, "limit of 100 bytes") {
		t.Fatalf("stdin over runtime.max_stdin_bytes: %d %+v %v", status, a, err)
	}
}

func TestOverCapacityGets429AfterQueueWait(t *testing.T) {
	testenv.RequireIntegration(t)
	s := startService(t, uniqueInstance(t), noPool, noData, noNode, "SANDBOX_RUNTIME_MAX_CONCURRENCY=1", "SANDBOX_RUNTIME_QUEUE_WAIT=300ms")
	first := s.postAsync("import time; time.sleep(2); print('slow')")
	waitFor(t, 10*time.Second, "the first run's container", func() bool { return len(servicetest.ContainersOf(t, s.Instance)) > 0 })
	start := time.Now()
	status, a, h := s.post(t, "print(1)")
	if status != 429 || h.Get("Retry-After") == "" || !strings.Contains(a.Error, "busy") {
		t.Fatalf("over capacity: %d %+v Retry-After=%q", status, a, h.Get("Retry-After"))
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Fatalf("429 after %v, before queue_wait", waited)
	}
	if a := <-first; a.Stdout != "slow\n" {
		t.Fatalf("the admitted run: %+v", a)
	}
}

func TestSIGTERMLetsTheRunFinishAndLeavesNothing(t *testing.T) {
	testenv.RequireIntegration(t)
	s := startService(t, uniqueInstance(t), noPool, noData, noNode)
	done := s.postAsync("import time; time.sleep(1.5); print('finished')")
	waitFor(t, 10*time.Second, "the run's container", func() bool { return len(servicetest.ContainersOf(t, s.Instance)) > 0 })
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	if a := <-done; a.Stdout != "finished\n" {
		t.Fatalf("the run in flight at SIGTERM: %+v", a)
	}
	if code := s.waitExit(t, 20*time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, s.Log())
	}
	if left := servicetest.ContainersOf(t, s.Instance); len(left) != 0 {
		t.Fatalf("containers left after SIGTERM: %v", left)
	}
}

func TestSIGTERMKillsRunsPastTheGrace(t *testing.T) {
	testenv.RequireIntegration(t)
	s := startService(t, uniqueInstance(t), noPool, noData, noNode, "SANDBOX_SERVER_SHUTDOWN_TIMEOUT=500ms", "SANDBOX_RUNTIME_TIMEOUT=30s")
	s.postAsync("import time; time.sleep(25)")
	waitFor(t, 10*time.Second, "the run's container", func() bool { return len(servicetest.ContainersOf(t, s.Instance)) > 0 })
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	if code := s.waitExit(t, 15*time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, s.Log())
	}
	if left := servicetest.ContainersOf(t, s.Instance); len(left) != 0 {
		t.Fatalf("containers left after the grace: %v", left)
	}
}

func TestCrashLeftoversAreRemovedAtNextStart(t *testing.T) {
	testenv.RequireIntegration(t)
	instance := uniqueInstance(t)
	s := startService(t, instance, noPool, noData, noNode, "SANDBOX_RUNTIME_TIMEOUT=60s")
	s.postAsync("import time; time.sleep(50)")
	waitFor(t, 10*time.Second, "the run's container", func() bool { return len(servicetest.ContainersOf(t, instance)) > 0 })
	_ = s.Cmd.Process.Signal(syscall.SIGKILL)
	s.waitExit(t, 10*time.Second)
	leftovers := servicetest.ContainersOf(t, instance)
	if len(leftovers) == 0 {
		t.Fatal("a SIGKILLed service left no container; the test proves nothing")
	}
	// Restarted with the default warm pool, whose own containers come
	// after the leftovers are gone.
	startService(t, instance)
	for _, c := range servicetest.ContainersOf(t, instance) {
		if slices.ContainsFunc(leftovers, func(l string) bool { return l[:12] == c[:12] }) {
			t.Fatalf("leftover %s not removed at start", c)
		}
	}
}

func TestWarmPoolServesAndLeavesNothing(t *testing.T) {
	testenv.RequireIntegration(t)
	s := startService(t, uniqueInstance(t), noData, noNode, "SANDBOX_RUNTIME_POOL_SIZE=2")
	waitFor(t, 20*time.Second, "the pool to fill", func() bool { return len(servicetest.ContainersOf(t, s.Instance)) == 2 })
	for i := range 4 {
		if status, a, _ := s.post(t, "import socket; print(socket.gethostname())"); status != 200 || a.Status != "ok" || len(a.Stdout) != 13 {
			t.Fatalf("call %d: %d %+v", i, status, a)
		}
	}
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	if code := s.waitExit(t, 20*time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, s.Log())
	}
	if left := servicetest.ContainersOf(t, s.Instance); len(left) != 0 {
		t.Fatalf("containers left after SIGTERM: %v", left)
	}
}
