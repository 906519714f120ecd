package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// An image build under way says so in the build status directory
// (Config.BuildStatusDir), as images/build.sh writes it: <name>.json
// holds the builder's pid, the image, the start (Unix seconds) and the
// expected duration, and the builder holds an flock on <name>.lock until it
// exits, however it exits. Anyone who can write the directory can make an
// image look "building", so the file is trusted only as far as it can be
// checked: its image is the one asked about, its times are sane, its pid is
// alive and the lock is held. Anything else is "not building", and a missing
// image is reported as missing, with the command that builds it.

// Bounds of a status file's content.
const (
	// maxStatusBytes caps the bytes read of a status file (build.sh writes
	// about 100).
	maxStatusBytes = 4 << 10
	// maxBuildSeconds caps the expected duration: no build of these images
	// takes a day.
	maxBuildSeconds = 24 * 60 * 60
	// clockSkew is how far in the future a start may be (the builder and the
	// service read the same clock; a little slack for rounding).
	clockSkew = time.Minute
	// maxPID is Linux's PID_MAX_LIMIT.
	maxPID = 1 << 22
)

// buildStatus is the content of a status file.
type buildStatus struct {
	PID             int    `json:"pid"`
	Image           string `json:"image"`
	Started         int64  `json:"started"`
	ExpectedSeconds int64  `json:"expected_seconds"`
}

// build is a build under way, as a status file tells it.
type build struct {
	started, readyAt time.Time
}

// statusName is the file name (without extension) of image's status and
// lock, as build.sh derives it: every byte but letters, digits, '.', '_'
// and '-' becomes '_', so no image name reaches outside the directory.
func statusName(image string) string {
	var b strings.Builder
	for i := 0; i < len(image); i++ {
		c := image[i]
		if c == '.' || c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// readBuild reports the build of image under way, as the status directory
// dir says, with ok false when there is none: no directory configured, no
// file, content that does not check out, a builder that is dead or does not
// hold its lock.
func readBuild(dir, image string, now time.Time) (b build, ok bool) {
	if dir == "" {
		return build{}, false
	}
	name := filepath.Join(dir, statusName(image))
	data, err := readSmall(name + ".json")
	if err != nil {
		return build{}, false
	}
	st, err := parseBuildStatus(data, image, now)
	if err != nil || !processAlive(st.PID) || !lockHeld(name+".lock") {
		return build{}, false
	}
	started := time.Unix(st.Started, 0)
	return build{started: started, readyAt: started.Add(time.Duration(st.ExpectedSeconds) * time.Second)}, true
}

// readSmall reads at most maxStatusBytes of a regular file, not following
// a symbolic link and not blocking on a FIFO.
func readSmall(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStatusBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxStatusBytes {
		return nil, errors.New("status file too large")
	}
	return data, nil
}

// parseBuildStatus checks a status file's content for image at now.
func parseBuildStatus(data []byte, image string, now time.Time) (buildStatus, error) {
	var st buildStatus
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return buildStatus{}, fmt.Errorf("build status: %w", err)
	}
	if dec.More() {
		return buildStatus{}, errors.New("build status: trailing data")
	}
	switch {
	case st.Image != image:
		return buildStatus{}, fmt.Errorf("build status: image %q, want %q", st.Image, image)
	// Pid 0 and -1 would signal a process group or every process, pid 1 is
	// always alive, and one past the kernel's pid_max wraps to a negative.
	case st.PID <= 1 || st.PID > maxPID:
		return buildStatus{}, fmt.Errorf("build status: pid %d", st.PID)
	case st.Started <= 0 || time.Unix(st.Started, 0).After(now.Add(clockSkew)):
		return buildStatus{}, fmt.Errorf("build status: start %d is not in the past", st.Started)
	case st.ExpectedSeconds <= 0 || st.ExpectedSeconds > maxBuildSeconds:
		return buildStatus{}, fmt.Errorf("build status: expected %d s is outside 1..%d", st.ExpectedSeconds, maxBuildSeconds)
	}
	return st, nil
}

// processAlive reports whether a process of that pid exists (one of
// another user answers EPERM: it exists).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// lockHeld reports whether someone holds an flock on the file: a shared
// lock of ours would be refused. A pid can be reused by another process
// after the builder died; its lock dies with it.
func lockHeld(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}
