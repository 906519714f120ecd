// Package testenv is the one place that says what the tests of every package
// may use of their environment: the gates of the integration, interop and
// fault tests (with the CI=true rule: a test that cannot reach what it needs
// fails there, never skips), the sandbox images they run and the logger of
// the runners they start. It imports nothing of the module, so any
// package's tests may use it.
package testenv

import (
	"io"
	"log/slog"
	"os"
	"testing"
)

// DefaultImage is the sandbox image `make image` builds.
const DefaultImage = "sandbox-python:3.11"

// DefaultDataImage is the data image (numpy, pandas, matplotlib, scipy)
// `make image-data` builds.
const DefaultDataImage = "sandbox-python-data:3.11"

// DefaultNodeImage is the Node.js image (JavaScript, TypeScript) `make
// image-node` builds.
const DefaultNodeImage = "sandbox-node:24"

// ci reports whether the tests run in CI, where a test that cannot reach
// what it needs fails rather than skips.
func ci() bool { return os.Getenv("CI") == "true" }

// Integration reports whether tests that need Docker must run (and fail when
// Docker or the image is missing): SANDBOXD_INTEGRATION=1 or CI=true.
func Integration() bool { return ci() || os.Getenv("SANDBOXD_INTEGRATION") == "1" }

// Interop reports whether the interop tests (node, npm packages, anvil) must
// run: SANDBOXD_INTEROP=1 or CI=true.
func Interop() bool { return ci() || os.Getenv("SANDBOXD_INTEROP") == "1" }

// faults reports whether the fault tests, which stop and restart dockerd,
// may run: only with SANDBOXD_FAULTS=1.
func faults() bool { return os.Getenv("SANDBOXD_FAULTS") == "1" }

// RequireIntegration skips the test outside integration runs.
func RequireIntegration(tb testing.TB) {
	tb.Helper()
	if !Integration() {
		tb.Skip("set SANDBOXD_INTEGRATION=1 (make test does) to run tests against Docker")
	}
}

// RequireInterop skips the test outside interop runs.
func RequireInterop(tb testing.TB) {
	tb.Helper()
	if !Interop() {
		tb.Skip("set SANDBOXD_INTEROP=1 to run the interop tests (needs node, test/interop/setup.sh, Docker, the image)")
	}
}

// RequireFaults skips the test unless SANDBOXD_FAULTS=1, and fails it in CI,
// where `make test` must have set it.
func RequireFaults(tb testing.TB) {
	tb.Helper()
	if faults() {
		return
	}
	if ci() {
		tb.Fatal("CI=true but SANDBOXD_FAULTS is not 1: run the fault tests through `make test`")
	}
	tb.Skip("set SANDBOXD_FAULTS=1 to stop and restart dockerd under the service (make test does)")
}

// SkipOrFailInCI skips the test with the reason, or fails it under CI=true,
// where a test that cannot reach what it needs must not skip: for a need
// no Require function above covers (an image's runner protocol, say).
func SkipOrFailInCI(tb testing.TB, reason string) {
	tb.Helper()
	if ci() {
		tb.Fatal("CI=true: " + reason)
	}
	tb.Skip(reason)
}

// Image returns the sandbox image the integration tests run:
// SANDBOXD_TEST_IMAGE when set (a tag built from work in progress with
// images/build.sh), else DefaultImage.
func Image() string { return imageOr("SANDBOXD_TEST_IMAGE", DefaultImage) }

// DataImage returns the data image the integration tests run:
// SANDBOXD_TEST_DATA_IMAGE when set (a tag built with
// `images/build.sh TAG python/data`), else DefaultDataImage.
func DataImage() string { return imageOr("SANDBOXD_TEST_DATA_IMAGE", DefaultDataImage) }

// NodeImage returns the Node.js image the integration tests run:
// SANDBOXD_TEST_NODE_IMAGE when set (a tag built with `images/build.sh TAG
// node`), else DefaultNodeImage.
func NodeImage() string { return imageOr("SANDBOXD_TEST_NODE_IMAGE", DefaultNodeImage) }

// imageOr returns the image named by the environment variable key, or def
// when it is unset or empty.
func imageOr(key, def string) string {
	if img := os.Getenv(key); img != "" {
		return img
	}
	return def
}

// ImageEnv returns the environment overrides that point a sandboxd binary at
// Image (the python environment) and DataImage (the data environment).
func ImageEnv() []string {
	return []string{"SANDBOX_RUNTIME_IMAGE=" + Image(), "SANDBOX_ENVIRONMENTS_DATA_IMAGE=" + DataImage()}
}

// Logger is the logger of the runners the tests start: debug to stderr when
// SANDBOXD_TEST_LOG=1, else nowhere.
func Logger() *slog.Logger {
	if os.Getenv("SANDBOXD_TEST_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
