package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandboxd/internal/servicetest"
	"sandboxd/internal/testenv"
)

// mustBuildStatus writes, in a new directory, the status that
// images/build.sh writes while it builds image (this process as the
// builder, started 10 s ago, expecting 300 s) and holds its lock, as the
// build does; finish removes the status and lets the lock go, as the build
// does when it ends.
func mustBuildStatus(t *testing.T, image string) (dir string, finish func()) {
	t.Helper()
	dir = t.TempDir()
	name := filepath.Join(dir, strings.NewReplacer(":", "_", "/", "_").Replace(image))
	lock, err := os.OpenFile(name+".lock", os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	status := fmt.Sprintf(`{"pid":%d,"image":%q,"started":%d,"expected_seconds":300}`, os.Getpid(), image, time.Now().Unix()-10)
	if err := os.WriteFile(name+".json", []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
	finish = func() {
		os.Remove(name + ".json")
		lock.Close()
	}
	t.Cleanup(finish)
	return dir, finish
}

// getJSON gets path from the service and decodes its JSON answer.
func getJSON(t *testing.T, s *service, path string, v any) int {
	t.Helper()
	resp, err := http.Get(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("GET %s: %d %q", path, resp.StatusCode, raw)
	}
	return resp.StatusCode
}

// healthAnswer is the JSON of GET /v1/health.
type healthAnswer struct {
	Status       string            `json:"status"`
	Environments map[string]string `json:"environments"`
	Building     map[string]struct {
		Image          string `json:"image"`
		ReadyInSeconds int    `json:"ready_in_seconds"`
	} `json:"building"`
}

// TestDataImageBuildingThenReady: while the data image is missing and its
// build runs (a status file and its lock), health is 200 and says data is
// building with an estimate, version says it too, a data run answers 503
// with Retry-After and "being built", and python runs are answered. When
// the image appears, data runs are answered and data's warm pool fills,
// without a restart.
func TestDataImageBuildingThenReady(t *testing.T) {
	testenv.RequireIntegration(t)
	instance := uniqueInstance(t)
	tag := "sandbox-python-data:building-" + strconv.Itoa(os.Getpid())
	dir, finish := mustBuildStatus(t, tag)
	s := startService(t, instance, noPool, noNode, "SANDBOX_ENVIRONMENTS_DATA_IMAGE="+tag, "SANDBOX_RUNTIME_BUILD_STATUS_DIR="+dir)

	var h healthAnswer
	if code := getJSON(t, s, "/v1/health", &h); code != 200 || h.Environments["data"] != "building" ||
		h.Environments["python"] != "ready" || h.Building["data"].Image != tag ||
		h.Building["data"].ReadyInSeconds < 200 || h.Building["data"].ReadyInSeconds > 300 {
		t.Fatalf("health while data builds: %d %+v", code, h)
	}
	var v struct {
		Building map[string]json.RawMessage `json:"building"`
	}
	if code := getJSON(t, s, "/v1/version", &v); code != 200 || v.Building["data"] == nil {
		t.Errorf("version while data builds: %d %+v", code, v)
	}
	status, a, hdr, err := s.sendBody(map[string]string{"code": "print(1)", "environment": "data"})
	if err != nil || status != http.StatusServiceUnavailable || !strings.Contains(a.Error, "is being built") {
		t.Fatalf("data run while building: %d %+v %v", status, a, err)
	}
	if ra, _ := strconv.Atoi(hdr.Get("Retry-After")); ra < 200 || ra > 300 {
		t.Errorf("Retry-After %q, want the time left (about 290 s)", hdr.Get("Retry-After"))
	}
	if status, a, _ := s.post(t, "print(6*7)"); status != 200 || a.Stdout != "42\n" {
		t.Fatalf("python run while data builds: %d %+v", status, a)
	}
	// Python has no pool and its run's container goes; data's pool cannot
	// start while its image builds.
	waitFor(t, 120*time.Second, "no container while data builds", func() bool {
		return len(servicetest.ContainersOf(t, instance)) == 0
	})

	// The build ends: the image is tagged, then the status goes. No time is
	// promised for what follows (a data container's start under a CPU hog
	// takes tens of seconds): only that it happens without a restart.
	t.Cleanup(func() { _ = exec.Command("docker", "image", "rm", tag).Run() }) // untags only: the image keeps its own tag
	if out, err := exec.Command("docker", "tag", testenv.DataImage(), tag).CombinedOutput(); err != nil {
		t.Fatalf("docker tag: %v %s", err, out)
	}
	finish()
	waitFor(t, 120*time.Second, "data's warm container, started by itself", func() bool {
		left := servicetest.ContainersOf(t, instance)
		return len(left) == 1 && strings.HasSuffix(left[0], " running")
	})
	// The refusal before the payment gate reads the shared health answer,
	// which lives a second (engineTTL): runs are answered after that.
	time.Sleep(time.Second)
	code := "import numpy; print(numpy.arange(4).sum())"
	if status, a, _, err := s.sendBody(map[string]string{"code": code, "environment": "data"}); err != nil || status != 200 || a.Stdout != "6\n" {
		t.Fatalf("data run once the image is there: %d %+v %v", status, a, err)
	}
	waitFor(t, 10*time.Second, "health without building", func() bool {
		var h healthAnswer
		return getJSON(t, s, "/v1/health", &h) == 200 && h.Building == nil && h.Status == "ok"
	})
}
