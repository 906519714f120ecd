package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
)

// oomEventWait bounds how long after an unexplained SIGKILL the run waits
// for Docker's "oom" event of its container. The kernel signals the OOM to
// containerd's shim before it kills, but the shim reports the OOM and the
// exit from two goroutines: under load the exit reaches dockerd first, and
// dockerd then records the exit with OOMKilled false for good. Its "oom"
// event still follows, within milliseconds on a quiet host; with eight
// memory bombs on two cores one was seen to take longer than 2 s. The wait
// runs beside the shutdown check (judgeSignal), which takes shutdownWindow
// whenever the kill was no OOM, so it is no longer than that: a program's
// own SIGKILL is answered after shutdownWindow, not the sum of both.
const oomEventWait = shutdownWindow

// oomKilled reports whether the kernel's OOM killer ended the container,
// which exited by a SIGKILL not ours: Docker's flag says so, or, when the
// flag lost the race with the exit, Docker's "oom" event of the container
// (already sent, or arriving within oomEventWait). Nothing else makes an OOM: an exit 137 of the program's
// own is no OOM. When the daemon no longer answers, the kill was most
// likely its own, on its way down: that is the service's failure, not the
// program's answer.
func (r *run) oomKilled(ctx context.Context) (bool, error) {
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	info, err := r.d.cli.ContainerInspect(ctx, r.b.id)
	if err != nil {
		if !r.d.answers(ctx) {
			return false, r.d.fail(ctx, "runtime.inspect", err)
		}
		r.log.Warn("inspect after exit 137 failed; not reporting OOM", "err", err)
		return false, nil
	}
	if info.State != nil && info.State.OOMKilled {
		return true, nil
	}
	oom, err := r.d.oomEvent(ctx, r.b.id, r.b.started, time.Now().Add(oomEventWait))
	if err != nil {
		r.log.Warn("reading Docker's events after exit 137 failed; not reporting OOM", "err", err)
		return false, nil
	}
	if oom {
		r.log.Debug("the OOM event came after the exit; reporting OOM")
	} else {
		r.log.Info("exit 137 without a kill of ours and no OOM event: the program's own SIGKILL", "waited", oomEventWait)
	}
	return oom, nil
}

// oomEvent reports whether Docker sends an "oom" event for the container
// between since and until (which may be in the future: the daemon then
// streams until it). It returns as soon as one comes.
func (d *Docker) oomEvent(ctx context.Context, id string, since, until time.Time) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs, errs := d.cli.Events(ctx, events.ListOptions{
		Since: eventTime(since.Add(-time.Second)),
		Until: eventTime(until),
		Filters: filters.NewArgs(
			filters.Arg("type", string(events.ContainerEventType)),
			filters.Arg("container", id),
			filters.Arg("event", string(events.ActionOOM)),
		),
	})
	select {
	case <-msgs:
		return true, nil
	case err := <-errs:
		if errors.Is(err, io.EOF) {
			return false, nil // the stream ended at until
		}
		return false, err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// eventTime formats a time as the Engine API's events filter wants it.
func eventTime(t time.Time) string {
	return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond())
}
