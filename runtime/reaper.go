package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/docker/docker/api/types/container"
)

// Reap removes every container of this instance, running or not: at start,
// those are leftovers of a crash, since a live service removes its own.
// It returns how many it removed. Containers of other instances, and ones
// without our labels, are left alone. Call it at start-up, before the first
// Run: the pool starts filling when it returns (whether it succeeded or not).
func (d *Docker) Reap(ctx context.Context) (int, error) {
	const op = "runtime.reap"
	if d.pool != nil {
		defer d.pool.start()
	}
	list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: instanceFilter(d.cfg.Instance)})
	if err != nil {
		return 0, d.fail(ctx, op, err)
	}
	var errs []error
	n := 0
	for _, c := range list {
		if err := d.remove(ctx, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("%s: remove %s: %w", op, shortID(c.ID), err))
			continue
		}
		n++
		d.log.Info("reaped leftover container", "container", shortID(c.ID), "job", c.Labels[LabelJob], "state", c.State)
	}
	return n, errors.Join(errs...)
}
