package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandboxd/internal/servicetest"
	"sandboxd/internal/testenv"
)

// mustFaults skips the test unless SANDBOXD_FAULTS=1 and fails it without root.
func mustFaults(t *testing.T) {
	t.Helper()
	testenv.RequireFaults(t)
	if os.Geteuid() != 0 {
		t.Fatal("the fault tests restart dockerd and need root")
	}
}

// startService starts sandboxd in free mode, without warm containers (no
// pool, no data environment), returning its URL.
func startService(t *testing.T, instance string) string {
	t.Helper()
	return servicetest.Start(t, servicetest.Options{Instance: instance,
		Env: []string{"SANDBOX_RUNTIME_TIMEOUT=30s", "SANDBOX_RUNTIME_POOL_SIZE=0", "SANDBOX_ENVIRONMENTS_DATA_ENABLED=false", "SANDBOX_ENVIRONMENTS_NODE_ENABLED=false"}}).URL
}

// post runs code and returns the status and the answer's raw JSON.
func post(url, code string) (int, string) {
	body, _ := json.Marshal(map[string]string{"code": code})
	c := &http.Client{Timeout: 60 * time.Second}
	resp, err := c.Post(url+"/v1/code", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// dockerdPID returns the running dockerd's pid, or 0.
func dockerdPID() int {
	out, err := exec.Command("pidof", "dockerd").Output()
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.Fields(string(out))[0])
	return pid
}

// stopDockerd stops the daemon and waits until it is gone.
func stopDockerd(t *testing.T) {
	t.Helper()
	pid := dockerdPID()
	if pid == 0 {
		t.Fatal("no dockerd runs")
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(60 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("dockerd did not stop within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startDockerd brings the daemon back with the project's own script.
func startDockerd(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("../../scripts/docker-up.sh").CombinedOutput(); err != nil {
		t.Fatalf("docker-up: %v\n%s", err, out)
	}
}

// leftovers counts the instance's containers, -1 when they cannot be listed.
func leftovers(t *testing.T, instance string) int {
	t.Helper()
	list, err := servicetest.Containers(context.Background(), instance)
	if err != nil {
		return -1
	}
	return len(list)
}

func TestDockerRestartUnderLoad(t *testing.T) {
	mustFaults(t)
	t.Cleanup(func() {
		if dockerdPID() == 0 {
			startDockerd(t)
		}
	})
	instance := fmt.Sprintf("faults-%d", os.Getpid())
	url := startService(t, instance)
	if status, body := post(url, "print('up')"); status != 200 {
		t.Fatalf("before the fault: %d %s", status, body)
	}

	type result struct {
		status int
		body   string
	}
	inflight := make(chan result, 3)
	for i := 0; i < 3; i++ {
		go func() {
			s, b := post(url, "import time; time.sleep(20); print('should not finish')")
			inflight <- result{s, b}
		}()
	}
	deadline := time.Now().Add(15 * time.Second)
	for leftovers(t, instance) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("the in-flight runs did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}

	stopDockerd(t)
	for i := 0; i < 3; i++ {
		select {
		case r := <-inflight:
			if r.status != 503 {
				t.Errorf("a run in flight when dockerd stopped answered %d %s, want 503", r.status, r.body)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a run in flight when dockerd stopped got no answer within 30 s")
		}
	}
	if status, body := post(url, "print(1)"); status != 503 || !strings.Contains(body, "Docker") {
		t.Errorf("a run while dockerd is down: %d %s, want 503 naming Docker", status, body)
	}
	if resp, err := http.Get(url + "/v1/health"); err != nil || resp.StatusCode != 503 {
		t.Errorf("health while dockerd is down: %v %v", resp, err)
	}

	startDockerd(t)
	back := time.Now()
	for {
		status, body := post(url, "print('back')")
		if status == 200 && strings.Contains(body, `"stdout":"back\n"`) {
			break
		}
		if time.Since(back) > 5*time.Second {
			t.Fatalf("no answer within 5 s of Docker coming back: %d %s", status, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("answering again %v after Docker came back", time.Since(back).Round(time.Millisecond))
	deadline = time.Now().Add(20 * time.Second)
	for n := leftovers(t, instance); n != 0; n = leftovers(t, instance) {
		if time.Now().After(deadline) {
			t.Fatalf("%d containers of the interrupted runs are still there 20 s after Docker came back", n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	servicetest.RemoveBinary()
	os.Exit(code)
}
