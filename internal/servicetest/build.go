package servicetest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

var (
	buildOnce sync.Once
	buildDir  string
	binary    string
	buildErr  error
)

// ModuleRoot returns the directory of the module's go.mod, found from the
// working directory upwards.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Binary builds ./cmd/sandboxd once per process into a temporary directory
// and returns its path; RemoveBinary deletes it.
func Binary() (string, error) {
	buildOnce.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			buildErr = err
			return
		}
		if buildDir, err = os.MkdirTemp("", "sandboxd-test"); err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(buildDir, "sandboxd")
		cmd := exec.Command("go", "build", "-o", binary, "./cmd/sandboxd")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/sandboxd: %v\n%s", err, out)
		}
	})
	return binary, buildErr
}

// RemoveBinary deletes the binary Binary built, if any. A TestMain calls it
// after m.Run.
func RemoveBinary() {
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
}
