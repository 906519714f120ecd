// Package testenv holds what the integration and interop tests of several
// packages share about their environment.
package testenv

import "os"

// DefaultImage is the sandbox image `make image` builds.
const DefaultImage = "sandbox-python:3.11"

// Image returns the sandbox image the integration tests run:
// SANDBOXD_TEST_IMAGE when set (a tag built from work in progress with
// images/python/build.sh), else DefaultImage.
func Image() string {
	if img := os.Getenv("SANDBOXD_TEST_IMAGE"); img != "" {
		return img
	}
	return DefaultImage
}

// ServiceEnv returns the environment overrides that point a sandboxd binary
// started by a test at Image.
func ServiceEnv() []string {
	return []string{"SANDBOX_RUNTIME_IMAGE=" + Image()}
}
