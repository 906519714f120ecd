package servicetest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandboxd/internal/testenv"
)

// StopWithin bounds a test service's graceful stop before it is killed.
const StopWithin = 60 * time.Second

// Start builds the binary (once per process) unless o.Binary is set, starts
// it with the module's config.yaml unless o.Config is set and with
// testenv.ImageEnv before o.Env, and waits until it listens. When the test ends the
// service is stopped (Stop), the test fails when any container of its
// instance is left on the daemon, and a failed test gets the service's log.
func Start(tb testing.TB, o Options) *Service {
	tb.Helper()
	if o.Binary == "" {
		bin, err := Binary()
		if err != nil {
			tb.Fatal(err)
		}
		o.Binary = bin
	}
	if o.Config == "" {
		root, err := ModuleRoot()
		if err != nil {
			tb.Fatal(err)
		}
		o.Config = filepath.Join(root, "config.yaml")
	}
	o.Env = append(testenv.ImageEnv(), o.Env...)
	s, err := Launch(context.Background(), o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(StopWithin); err != nil {
			tb.Errorf("stopping %s: %v", o.Instance, err)
		}
		AssertNoContainers(tb, o.Instance)
		if tb.Failed() {
			tb.Logf("sandboxd %s log:\n%s", o.Instance, s.Log())
		}
	})
	return s
}

// AssertNoContainers fails the test when any container of the instance is
// left on the daemon, or when they cannot be listed.
func AssertNoContainers(tb testing.TB, instance string) {
	tb.Helper()
	left, err := Containers(context.Background(), instance)
	if err != nil {
		tb.Errorf("%v", err)
		return
	}
	if len(left) > 0 {
		tb.Errorf("containers of instance %s left after the service stopped: %s", instance, strings.Join(left, ", "))
	}
}

// ContainersOf lists the instance's containers as Containers does, failing
// the test when they cannot be listed.
func ContainersOf(tb testing.TB, instance string) []string {
	tb.Helper()
	ids, err := Containers(context.Background(), instance)
	if err != nil {
		tb.Fatal(err)
	}
	return ids
}
