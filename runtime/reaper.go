package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// Reap removes every container of this instance (of its environment only,
// for a runner of NewEnvironments), running or not: at start,
// those are leftovers of a crash, since a live service removes its own.
// It returns how many it removed. Containers of other instances, and ones
// without our labels, are left alone. Call it at start-up, before the first
// Run: the pool starts filling when it returns (whether it succeeded or not).
func (d *Docker) Reap(ctx context.Context) (int, error) {
	defer d.startPool()
	d.reapSocketDirs(time.Now().Add(-staleSocketDir))
	filter := instanceFilter(d.cfg.Instance)
	if d.environment != "" {
		filter.Add("label", LabelEnvironment+"="+d.environment)
	}
	return d.removeListed(ctx, filter)
}

// reapInstance removes every container of the instance, whatever its
// environment, without starting the pool (Environments.Reap does).
func (d *Docker) reapInstance(ctx context.Context) (int, error) {
	return d.removeListed(ctx, instanceFilter(d.cfg.Instance))
}

// startPool starts filling the warm pool, if there is one.
func (d *Docker) startPool() {
	if d.pool != nil {
		d.pool.start()
	}
}

// removeListed removes the containers the filter selects, running or not,
// and returns how many.
func (d *Docker) removeListed(ctx context.Context, filter filters.Args) (int, error) {
	const op = "runtime.reap"
	list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filter})
	if err != nil {
		return 0, d.fail(ctx, op, err)
	}
	var errs []error
	n := 0
	for _, c := range list {
		if c.State == "paused" {
			// A frozen session's: under runsc Docker cannot kill a paused
			// container, so it is thawed first (session_freeze.go).
			if err := d.cli.ContainerUnpause(ctx, c.ID); err != nil {
				d.log.Warn("cannot thaw a paused leftover container", "container", shortID(c.ID), "err", err)
			}
		}
		if err := d.removeForGood(ctx, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("%s: remove %s: %w", op, shortID(c.ID), err))
			continue
		}
		n++
		d.log.Info("reaped leftover container", "container", shortID(c.ID), "job", c.Labels[LabelJob],
			"environment", c.Labels[LabelEnvironment], "state", c.State)
	}
	return n, errors.Join(errs...)
}

// removeForGood removes a leftover container and checks that it is gone,
// removing it again while it is not: a crashed service may have left
// dockerd still creating or starting it, and a removal answered during
// that work has been seen to leave the container behind, "created".
// Bounded by reapRecheck and ctx.
func (d *Docker) removeForGood(ctx context.Context, id string) error {
	deadline := time.Now().Add(reapRecheck)
	for {
		if err := d.remove(ctx, id); err != nil {
			return err
		}
		_, err := d.cli.ContainerInspect(ctx, id)
		switch {
		case cerrdefs.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case time.Now().After(deadline):
			return fmt.Errorf("still there %v after its removal", reapRecheck)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(removeConflictPause):
		}
	}
}

// reapRecheck bounds how long removeForGood keeps removing a leftover that
// its removals have not yet made go away.
const reapRecheck = 10 * time.Second

// staleSocketDir is how old a runner's socket directory must be for Reap to
// remove it: a live one is either connected, its socket already removed
// and its container needing the directory no more, or seconds old.
const staleSocketDir = 10 * time.Minute

// reapSocketDirs removes the runners' socket directories (socket.go)
// older than before: a crashed service's, which no one else removes.
func (d *Docker) reapSocketDirs(before time.Time) {
	if d.ioBase == "" {
		return
	}
	entries, err := os.ReadDir(d.ioBase)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !strings.HasPrefix(e.Name(), "io-") || info.ModTime().After(before) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(d.ioBase, e.Name())); err != nil {
			d.log.Warn("cannot remove a stale socket directory", "err", err)
		}
	}
}
