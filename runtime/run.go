package runtime

import (
	"context"
	"errors"
	"log/slog"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"sandboxd"
)

// drainGrace bounds how long output is still read after a kill (cap or
// deadline): long enough for what the program printed before it died, short
// enough that a timeout answers within a second of the limit.
const drainGrace = 500 * time.Millisecond

// exitKilled is the exit status of a process ended by SIGKILL (128 + 9).
const exitKilled = 137

// errNotStarted is the error of a run whose container stopped before the
// runner acknowledged the program: the program never ran.
var errNotStarted = errors.New("runtime: the container stopped before its program started")

// Run runs job.Code in a container of its own and returns what the program
// did. The container is a warm one from the pool when Config.PoolSize > 0
// (waiting, when the pool is empty, for one being started), else one
// created for the run: created, attached, its exit awaited, started. The
// code is handed over on stdin and the run watched: at Config.Timeout after
// the hand-over, or as soon as stdout or stderr passes
// Config.MaxOutputBytes, the container is killed. The answer comes as soon as
// the image's runner reports the program's end, or else at the container's
// exit. Whatever happens, the container is removed afterwards, in the
// background (Close waits for it). A container that turns out to have died
// before its program started is replaced by a fresh one, once.
//
// A program that fails, loops, floods or runs out of memory is a Result.
// Errors are the service's: CodeUnavailable when Docker is unreachable, the
// image is missing or the runner is closing; CodeInternal for other Engine
// API failures; the context's error (wrapped) when ctx ends first.
func (d *Docker) Run(ctx context.Context, job sandboxd.Job) (sandboxd.Result, error) {
	ctx, f, end, err := d.inflight.begin(ctx)
	if err != nil {
		return sandboxd.Result{}, err
	}
	defer end()
	log := d.log.With("job", job.ID)
	pooled := d.pool != nil
	for attempt := 1; ; attempt++ {
		b, err := d.acquire(ctx, job.ID, pooled, log)
		if err != nil {
			return sandboxd.Result{}, err
		}
		f.setContainer(b.id)
		r := &run{d: d, b: b, log: log.With("container", shortID(b.id))}
		res, err := r.supervise(ctx, job)
		d.retire(b)
		switch {
		case errors.Is(err, errNotStarted) && attempt == 1:
			r.log.Warn("the container stopped before its program started; using a fresh one", "pooled", pooled)
			pooled = false
			continue
		case errors.Is(err, errNotStarted) && !d.answers(ctx):
			return sandboxd.Result{}, d.fail(ctx, "runtime.run", err)
		case errors.Is(err, errNotStarted):
			return sandboxd.Result{}, sandboxd.Wrap(sandboxd.CodeInternal, "runtime.run", err,
				"the sandbox stopped before the program started")
		case err != nil:
			return sandboxd.Result{}, err
		}
		r.log.Debug("run finished", "status", res.Status, "exit_code", res.ExitCode, "duration", res.Duration)
		return res, nil
	}
}

// acquire returns a box for the job: from the pool when pooled and the pool
// has or is starting one, else a fresh one.
func (d *Docker) acquire(ctx context.Context, jobID string, pooled bool, log *slog.Logger) (*box, error) {
	if pooled {
		if b, ok, err := d.pool.take(ctx); ok || err != nil {
			return b, err
		}
	}
	b, err := d.prepare(ctx, jobID, log)
	if err == nil && d.pool != nil {
		d.pool.kick() // the engine works again: the pool need not wait out its backoff
	}
	return b, err
}

// create creates a container and returns its ID. The call itself is not
// cancelled with ctx: a create cancelled on our side may still complete on
// the daemon's, after any attempt to remove it. When ctx ends meanwhile, the
// new container is removed at once.
func (d *Docker) create(ctx context.Context, sp spec, log *slog.Logger) (string, error) {
	const op = "runtime.create"
	if ctx.Err() != nil {
		return "", ctxError(ctx, op)
	}
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	resp, err := d.cli.ContainerCreate(cctx, sp.config, sp.host, nil, nil, sp.name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", d.missingImage(op, err)
		}
		return "", d.fail(ctx, op, err)
	}
	if ctx.Err() != nil {
		d.removeLater(resp.ID, log, nil)
		return "", ctxError(ctx, op)
	}
	for _, w := range resp.Warnings {
		log.Warn("docker warned at create", "warning", w)
	}
	return resp.ID, nil
}

// cleanup force-removes a container on a fresh short context, so a run whose
// request was cancelled leaves nothing behind either.
func (d *Docker) cleanup(ctx context.Context, id string, log *slog.Logger) {
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := d.remove(ctx, id); err != nil {
		log.Warn("removing the container failed; Reap will retry at the next start", "err", err)
	}
}

// remove force-removes a container. One already gone, or being removed by
// another call (Close and the run's own cleanup may race), is no error.
func (d *Docker) remove(ctx context.Context, id string) error {
	err := d.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err == nil || cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) {
		return nil
	}
	return err
}

// cleanupContext is a context for cleaning up after ctx: it keeps ctx's
// values but not its cancellation, and ends after cleanupTimeout.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// run is one program in one box.
type run struct {
	d      *Docker
	b      *box
	log    *slog.Logger
	killed bool
	res    sandboxd.Result
}

// supervise hands the code over and watches the run to its end: the
// runner's end marker, or else the container's exit.
func (r *run) supervise(ctx context.Context, job sandboxd.Job) (sandboxd.Result, error) {
	handover := time.Now()
	r.b.s.send(r.b.proto.message(job.Code, job.Stdin))
	deadline := time.NewTimer(r.d.cfg.Timeout)
	defer deadline.Stop()
	if err := r.watchOutput(ctx, deadline.C); err != nil {
		return sandboxd.Result{}, err
	}
	// Reading has ended: the output no longer changes.
	out := r.b.s.out
	if rep, ok := out.ended(); ok && !r.res.TimedOut {
		r.res.ExitCode = rep.status
		r.res.Usage = &sandboxd.Usage{CPU: time.Duration(rep.cpuMS) * time.Millisecond, MaxRSSKB: rep.maxRSSKB}
	} else {
		exit, err := r.watchExit(ctx, deadline.C)
		if err != nil {
			return sandboxd.Result{}, err
		}
		if !out.acked() && !r.res.TimedOut && !out.truncated() {
			return sandboxd.Result{}, errNotStarted
		}
		r.res.ExitCode = exit
		if exit == exitKilled {
			if r.res.OOMKilled, err = r.oomKilled(ctx); err != nil {
				return sandboxd.Result{}, err
			}
		}
		// A program killed by a signal that we did not send may have been
		// killed by dockerd stopping (it kills every container at shutdown,
		// then goes away): that is our failure, not the program's answer,
		// and must not be delivered (or charged).
		if exit > 128 && !r.res.TimedOut && !out.truncated() && !r.res.OOMKilled && r.d.goesAway(ctx) {
			return sandboxd.Result{}, sandboxd.Errorf(sandboxd.CodeUnavailable, "runtime.run",
				"Docker stopped during the run; retry once it is back")
		}
	}
	r.res.Duration = time.Since(handover)
	out.finish()
	r.res.Truncated = out.truncated()
	r.res.Stdout = decode(out.stdout.buf)
	r.res.Stderr = decode(out.stderr.buf)
	r.res.Classify()
	return r.res, nil
}

// watchOutput reads the output until it ends (or the end marker comes), a
// cap is hit, the deadline passes or ctx ends; in every case the attach
// connection is closed after.
func (r *run) watchOutput(ctx context.Context, deadline <-chan time.Time) error {
	s := r.b.s
	defer s.close()
	select {
	case <-s.done:
		if s.err != nil {
			r.log.Warn("attach stream ended with an error", "err", s.err)
		}
		if s.out.truncated() {
			r.kill(ctx) // the stream ended right after the cap: it is done
		}
	case <-s.capHit:
		r.killAndDrain(ctx)
	case <-deadline:
		r.res.TimedOut = true
		r.killAndDrain(ctx)
		// Output the drain found over the cap was written before the kill:
		// the program reached the output limit first, and only reading it
		// lagged (a loaded host). It is an output_limit, not a timeout.
		if s.out.truncated() {
			r.res.TimedOut = false
		}
	case <-ctx.Done():
		s.close()
		r.kill(ctx)
		return ctxError(ctx, "runtime.run")
	}
	return nil
}

// killAndDrain kills the container while reading on: the kill call waits for
// the exit, the exit for the daemon's output copy, and the copy for us. What
// the program wrote before it died is kept; reading stops at the end of the
// stream or after drainGrace, whichever comes first.
func (r *run) killAndDrain(ctx context.Context) {
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		r.kill(ctx)
	}()
	r.b.s.drain(drainGrace)
	<-r.b.s.done
	r.b.s.close()
	<-killed
}

// watchExit waits for the container's exit status. A program that closed
// its output but runs on is killed at the deadline like any other.
func (r *run) watchExit(ctx context.Context, deadline <-chan time.Time) (int, error) {
	for {
		var stuck <-chan time.Time
		if r.killed {
			deadline = nil
			stuck = time.After(cleanupTimeout)
		}
		select {
		case <-r.b.exited:
			if err := r.b.waitErr; err != nil {
				if ctx.Err() != nil {
					r.kill(ctx)
					return 0, ctxError(ctx, "runtime.run")
				}
				return 0, r.d.fail(ctx, "runtime.wait", err)
			}
			if r.b.exitMsg != "" {
				r.log.Warn("docker reported an error with the exit", "err", r.b.exitMsg)
			}
			return r.b.exitCode, nil
		case <-deadline:
			r.res.TimedOut = true
			r.kill(ctx)
		case <-stuck:
			return 0, sandboxd.Errorf(sandboxd.CodeInternal, "runtime.wait",
				"container %s did not exit within %s of SIGKILL", shortID(r.b.id), cleanupTimeout)
		case <-ctx.Done():
			r.kill(ctx)
			return 0, ctxError(ctx, "runtime.run")
		}
	}
}

// kill sends SIGKILL to the whole container. The Engine API call returns
// once the container has exited (or after the daemon's own 2 s wait).
func (r *run) kill(ctx context.Context) {
	r.killed = true
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	err := r.d.cli.ContainerKill(ctx, r.b.id, "KILL")
	switch {
	case err == nil:
	case cerrdefs.IsConflict(err) || cerrdefs.IsNotFound(err):
		r.log.Debug("kill: container already stopped", "err", err)
	default:
		r.log.Warn("kill failed", "err", err)
	}
}
