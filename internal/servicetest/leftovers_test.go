package servicetest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"sandboxd/internal/testenv"
	"sandboxd/runtime"
)

// errorRecorder is a testing.TB whose Errorf is kept instead of failing the
// test, to check a check.
type errorRecorder struct {
	testing.TB
	errors []string
}

// Errorf keeps the message.
func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// Helper does nothing: the recorder reports no lines.
func (r *errorRecorder) Helper() {}

// TestAssertNoContainersFailsOnALeftover: a container of the instance left
// on the daemon (created, never started, as a warm-pool container a killed
// service leaves) fails the check that runs after every stop; once it is
// gone the check passes.
func TestAssertNoContainersFailsOnALeftover(t *testing.T) {
	testenv.RequireIntegration(t)
	instance := fmt.Sprintf("servicetest-%d-leftover", os.Getpid())
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	created, err := cli.ContainerCreate(ctx, &container.Config{Image: testenv.Image(), Cmd: []string{"true"},
		Labels: map[string]string{runtime.LabelManaged: "true", runtime.LabelInstance: instance}}, nil, nil, nil, "")
	if err != nil {
		t.Fatalf("creating the leftover: %v", err)
	}
	removed := false
	remove := func() {
		if !removed {
			removed = true
			if err := cli.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true}); err != nil {
				t.Errorf("removing the leftover: %v", err)
			}
		}
	}
	defer remove()

	rec := &errorRecorder{TB: t}
	AssertNoContainers(rec, instance)
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], created.ID[:12]) {
		t.Fatalf("the check with a container left: errors %q, want one naming %.12s", rec.errors, created.ID)
	}
	remove()
	rec = &errorRecorder{TB: t}
	AssertNoContainers(rec, instance)
	if len(rec.errors) != 0 {
		t.Errorf("the check with nothing left: errors %q, want none", rec.errors)
	}
}

// TestStartStopsGracefullyAndLeavesNothing: a service with a warm pool,
// stopped as Start's cleanup stops it, leaves no container of its instance
// (the leftovers of item 4 came from services killed instead).
func TestStartStopsGracefullyAndLeavesNothing(t *testing.T) {
	testenv.RequireIntegration(t)
	instance := fmt.Sprintf("servicetest-%d-graceful", os.Getpid())
	s := Start(t, Options{Instance: instance, Env: []string{"SANDBOX_RUNTIME_POOL_SIZE=2"}})
	deadline := time.Now().Add(60 * time.Second)
	for len(ContainersOf(t, instance)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not fill within 60 s\n%s", s.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := s.Stop(StopWithin); err != nil {
		t.Fatal(err)
	}
	if code := s.ExitCode(); code != 0 {
		t.Errorf("exit code %d after SIGTERM", code)
	}
	AssertNoContainers(t, instance)
}

func TestMain(m *testing.M) {
	code := m.Run()
	RemoveBinary()
	os.Exit(code)
}
