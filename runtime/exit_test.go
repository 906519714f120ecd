package runtime

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"sandboxd"
)

// containerEvents streams the kill and destroy events of the instance's
// containers from now until the test ends.
func containerEvents(t *testing.T, d *Docker, instance string) <-chan events.Message {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	msgs, errs := d.cli.Events(ctx, events.ListOptions{
		Since: eventTime(time.Now()),
		Filters: filters.NewArgs(
			filters.Arg("type", string(events.ContainerEventType)),
			filters.Arg("label", LabelInstance+"="+instance),
			filters.Arg("event", string(events.ActionKill)),
			filters.Arg("event", string(events.ActionDestroy)),
		),
	})
	go func() {
		if err := <-errs; err != nil && ctx.Err() == nil {
			t.Errorf("events: %v", err)
		}
	}()
	return msgs
}

// TestRunEndsWithoutAKill proves that a run whose runner reported its end
// is removed once its container has exited by itself, not killed: a forced
// removal of a running container costs a runc kill (a process of its own,
// and calls through containerd and the shim), once per answer
// (BENCHMARKS.md, 2026-12-03 21:04). Before exitWait every answer's
// container got a kill event.
func TestRunEndsWithoutAKill(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		instance := fmt.Sprintf("%s-%s", testInstance, jobID(t))
		d := mustDocker(t, mode, func(c *Config) { c.Instance = instance })
		msgs := containerEvents(t, d, instance)
		const runs = 5
		for i := range runs {
			res := mustRun(t, d, fmt.Sprintf("print(%d)\n", i))
			check(t, res, want{stdout: fmt.Sprintf("%d\n", i), status: sandboxd.StatusOK})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := d.WaitRemovals(ctx); err != nil {
			t.Fatal(err)
		}
		kills := 0
		for destroyed := 0; destroyed < runs; {
			select {
			case m := <-msgs:
				switch m.Action {
				case events.ActionKill:
					kills++
				case events.ActionDestroy:
					destroyed++
				}
			case <-ctx.Done():
				t.Fatalf("%d of %d containers destroyed", destroyed, runs)
			}
		}
		if kills > 0 {
			t.Errorf("%d of %d answered runs had their container killed, not left to exit", kills, runs)
		}
	})
}

// TestRunThatLingersIsKilled proves the bound of exitWait: a program whose
// finalizer spins after the runner's end marker is answered at once, and
// its container is killed within exitGrace of the answer, never left to
// run on.
func TestRunThatLingersIsKilled(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		instance := fmt.Sprintf("%s-%s", testInstance, jobID(t))
		d := mustDocker(t, mode, func(c *Config) { c.Instance = instance })
		msgs := containerEvents(t, d, instance)
		code := "class Spin:\n    def __del__(self):\n        while True:\n            pass\n\nkeep = Spin()\nprint('answered')\n"
		res := mustRun(t, d, code)
		answered := time.Now()
		check(t, res, want{stdout: "answered\n", status: sandboxd.StatusOK})
		if res.Duration > time.Second {
			t.Errorf("the answer took %v: it waited for the lingering finalizer", res.Duration)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var killed bool
		for {
			select {
			case m := <-msgs:
				if m.Action == events.ActionKill {
					killed = true
					continue
				}
				if !killed {
					t.Errorf("the container was destroyed without a kill: its finalizer did not linger, so this proves nothing")
				}
				// Removal after the kill takes a loaded host a while: the
				// bound checked is on the kill's start, exitGrace, plus
				// the removal.
				if took := time.Since(answered); took > exitGrace+cleanupTimeout {
					t.Errorf("the container was destroyed %v after the answer, over exitGrace (%v) and a removal", took, exitGrace)
				}
				return
			case <-ctx.Done():
				t.Fatal("the lingering container was not destroyed within 30 s of its answer")
			}
		}
	})
}
