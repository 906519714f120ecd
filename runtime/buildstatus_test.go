package runtime

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandboxd"
)

const buildImage = "sandbox-python-data:3.11"

// TestParseBuildStatus: only a well-formed status for the image asked
// about, with a sane pid and times, is accepted; hostile content is not.
func TestParseBuildStatus(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	good := fmt.Sprintf(`{"pid":4242,"image":%q,"started":%d,"expected_seconds":300}`, buildImage, now.Unix()-60)
	if st, err := parseBuildStatus([]byte(good+"\n"), buildImage, now); err != nil || st.PID != 4242 || st.ExpectedSeconds != 300 {
		t.Fatalf("good status: %+v %v", st, err)
	}
	for name, data := range map[string]string{
		"empty":           ``,
		"not json":        `pid=4242`,
		"other image":     strings.Replace(good, buildImage, "sandbox-python:3.11", 1),
		"pid 0 (group)":   strings.Replace(good, "4242", "0", 1),
		"pid -1 (all)":    strings.Replace(good, "4242", "-1", 1),
		"pid 1":           strings.Replace(good, "4242", "1", 1),
		"pid too large":   strings.Replace(good, "4242", "99999999999999999999", 1),
		"pid wraps":       strings.Replace(good, "4242", "4294967295", 1),
		"started future":  fmt.Sprintf(`{"pid":4242,"image":%q,"started":%d,"expected_seconds":300}`, buildImage, now.Unix()+3600),
		"started zero":    fmt.Sprintf(`{"pid":4242,"image":%q,"started":0,"expected_seconds":300}`, buildImage),
		"expected zero":   strings.Replace(good, `"expected_seconds":300`, `"expected_seconds":0`, 1),
		"expected a year": strings.Replace(good, `"expected_seconds":300`, `"expected_seconds":31536000`, 1),
		"negative":        strings.Replace(good, `"expected_seconds":300`, `"expected_seconds":-5`, 1),
		"unknown field":   strings.Replace(good, `{`, `{"ready":true,`, 1),
		"trailing":        good + `{"pid":1}`,
		"string pid":      strings.Replace(good, "4242", `"4242"`, 1),
	} {
		if st, err := parseBuildStatus([]byte(data), buildImage, now); err == nil {
			t.Errorf("%s: accepted %+v", name, st)
		}
	}
}

// writeStatus writes a status file for image in dir, with pid and the
// start and duration given.
func writeStatus(t *testing.T, dir, image string, pid int, started time.Time, expected int) {
	t.Helper()
	body := fmt.Sprintf(`{"pid":%d,"image":%q,"started":%d,"expected_seconds":%d}`, pid, image, started.Unix(), expected)
	if err := os.WriteFile(filepath.Join(dir, statusName(image)+".json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mustHoldLock holds an flock on image's lock file in dir until the test
// ends, as build.sh does while it builds.
func mustHoldLock(t *testing.T, dir, image string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, statusName(image)+".lock"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestReadBuild: a build is under way only while the status checks out,
// its builder is alive and its lock is held; a dead pid, a lock nobody
// holds, a symbolic link, an oversized file and no directory are "not
// building".
func TestReadBuild(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	if _, ok := readBuild(dir, buildImage, now); ok {
		t.Fatal("no status file read as building")
	}
	writeStatus(t, dir, buildImage, os.Getpid(), now.Add(-time.Minute), 300)
	if _, ok := readBuild(dir, buildImage, now); ok {
		t.Error("building without its lock held")
	}
	mustHoldLock(t, dir, buildImage)
	b, ok := readBuild(dir, buildImage, now)
	if !ok || !b.readyAt.Equal(time.Unix(now.Add(-time.Minute).Unix(), 0).Add(300*time.Second)) {
		t.Fatalf("live build: %+v %v", b, ok)
	}
	if _, ok := readBuild("", buildImage, now); ok {
		t.Error("building with no status directory configured")
	}
	if _, ok := readBuild(dir, "sandbox-python:3.11", now); ok {
		t.Error("another image's status counted")
	}
	writeStatus(t, dir, buildImage, deadPID(t), now.Add(-time.Minute), 300)
	if _, ok := readBuild(dir, buildImage, now); ok {
		t.Error("a dead builder's status read as building")
	}

	// A symbolic link to a good status elsewhere is not followed.
	other := t.TempDir()
	writeStatus(t, other, buildImage, os.Getpid(), now.Add(-time.Minute), 300)
	name := filepath.Join(dir, statusName(buildImage)+".json")
	os.Remove(name)
	if err := os.Symlink(filepath.Join(other, statusName(buildImage)+".json"), name); err != nil {
		t.Fatal(err)
	}
	if _, ok := readBuild(dir, buildImage, now); ok {
		t.Error("a symbolic link was followed")
	}
	os.Remove(name)
	big := fmt.Sprintf(`{"pid":%d,"image":%q,"started":%d,"expected_seconds":300}`, os.Getpid(), buildImage, now.Unix()-60)
	if err := os.WriteFile(name, []byte(big+strings.Repeat(" ", maxStatusBytes)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := readBuild(dir, buildImage, now); ok {
		t.Error("an oversized status file was read")
	}
}

// TestStatusName: an image name never reaches outside the directory, and
// the name is build.sh's.
func TestStatusName(t *testing.T) {
	for image, want := range map[string]string{
		"sandbox-python-data:3.11":    "sandbox-python-data_3.11",
		"../../etc/passwd":            ".._.._etc_passwd",
		"registry.local:5000/a/b:tag": "registry.local_5000_a_b_tag",
	} {
		if got := statusName(image); got != want {
			t.Errorf("statusName(%q) = %q, want %q", image, got, want)
		}
	}
	out, err := exec.Command("bash", "-c", `printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '_'`, "_", "registry.local:5000/a/b:tag").Output()
	if err != nil || string(out) != statusName("registry.local:5000/a/b:tag") {
		t.Errorf("build.sh's name %q (%v), statusName's %q", out, err, statusName("registry.local:5000/a/b:tag"))
	}
}

// TestBuildingImageError: a run refused while its image builds is
// CodeUnavailable with a Retry-After of the time left (bounded), a message
// saying it is being built and when, and an ImageBuild cause; a late build
// asks again soon.
func TestBuildingImageError(t *testing.T) {
	d := &Docker{cfg: Config{Image: buildImage}, environment: "data"}
	now := time.Now()
	for name, tc := range map[string]struct {
		readyIn   time.Duration
		retry     time.Duration
		inMessage string
	}{
		"on time": {140 * time.Second, 140 * time.Second, "ready in about 140 s"},
		"nearly":  {time.Second, minBuildRetry, "ready in about 1 s"},
		"long":    {3 * time.Hour, maxBuildRetry, "ready in about 10800 s"},
		"late":    {-2 * time.Minute, lateBuildRetry, "taking longer than expected"},
	} {
		b := build{started: now.Add(-5 * time.Minute), readyAt: now.Add(tc.readyIn)}
		err := d.buildingImage("runtime.create", b, now)
		var e *sandboxd.Error
		var ib *sandboxd.ImageBuild
		if !errors.As(err, &e) || e.Code != sandboxd.CodeUnavailable || e.RetryAfter != tc.retry ||
			!strings.Contains(e.Message, "image "+buildImage+" is being built") || !strings.Contains(e.Message, tc.inMessage) {
			t.Errorf("%s: %#v", name, err)
		}
		if !errors.As(err, &ib) || ib.Environment != "data" || ib.Image != buildImage || !ib.ReadyAt.Equal(b.readyAt) {
			t.Errorf("%s: cause %+v", name, ib)
		}
	}
}
