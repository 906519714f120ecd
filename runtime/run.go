package runtime

import (
	"context"
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

// Run runs job.Code in a fresh container and returns what the program did.
// The container is created, attached, registered for its exit, started, fed
// the code on stdin, and watched: at Config.Timeout after the hand-over, or
// as soon as stdout or stderr passes Config.MaxOutputBytes, it is killed.
// Whatever happens, it is removed before Run returns.
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
	id, err := d.create(ctx, newSpec(d.cfg, job), log)
	if err != nil {
		return sandboxd.Result{}, err
	}
	f.setContainer(id)
	log = log.With("container", shortID(id))
	defer d.cleanup(ctx, id, log)

	r := &run{d: d, id: id, log: log}
	defer r.release()
	if err := r.start(ctx); err != nil {
		return sandboxd.Result{}, err
	}
	res, err := r.supervise(ctx, job.Code)
	if err != nil {
		return sandboxd.Result{}, err
	}
	log.Debug("run finished", "status", res.Status, "exit_code", res.ExitCode, "duration", res.Duration)
	return res, nil
}

// create creates the run's container and returns its ID.
func (d *Docker) create(ctx context.Context, sp spec, log *slog.Logger) (string, error) {
	const op = "runtime.create"
	resp, err := d.cli.ContainerCreate(ctx, sp.config, sp.host, nil, nil, sp.name)
	if err != nil {
		if ctx.Err() != nil {
			// The daemon may have created it before the cancel reached it.
			d.cleanup(ctx, sp.name, log)
			return "", ctxError(ctx, op)
		}
		if cerrdefs.IsNotFound(err) {
			return "", d.missingImage(op, err)
		}
		return "", d.fail(ctx, op, err)
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

// run is the state of one started container.
type run struct {
	d      *Docker
	id     string
	log    *slog.Logger
	s      *stream
	waitC  <-chan container.WaitResponse
	waitE  <-chan error
	waited bool
	killed bool
	res    sandboxd.Result
}

// start attaches, registers for the next exit, and starts the container, in
// that order: attaching first loses no output; waiting first misses no exit.
func (r *run) start(ctx context.Context) error {
	s, err := r.d.attach(ctx, r.id)
	if err != nil {
		return r.d.fail(ctx, "runtime.attach", err)
	}
	r.s = s
	// ContainerWait returns once the daemon has registered the wait.
	r.waitC, r.waitE = r.d.cli.ContainerWait(ctx, r.id, container.WaitConditionNextExit)
	select {
	case err := <-r.waitE:
		r.waited = true
		return r.d.fail(ctx, "runtime.wait", err)
	default:
	}
	if ctx.Err() != nil {
		return ctxError(ctx, "runtime.start")
	}
	if err := r.d.cli.ContainerStart(ctx, r.id, container.StartOptions{}); err != nil {
		return r.d.fail(ctx, "runtime.start", err)
	}
	return nil
}

// release closes the attach connection and, when the exit was never
// received, drains the wait so the client's goroutine can end.
func (r *run) release() {
	if r.s != nil {
		r.s.close()
	}
	if r.waitC != nil && !r.waited {
		go func() {
			select {
			case <-r.waitC:
			case <-r.waitE:
			}
		}()
	}
}

// supervise hands the code over and watches the run to its end.
func (r *run) supervise(ctx context.Context, code string) (sandboxd.Result, error) {
	handover := time.Now()
	r.s.start(code)
	deadline := time.NewTimer(r.d.cfg.Timeout)
	defer deadline.Stop()
	if err := r.watchOutput(ctx, deadline.C); err != nil {
		return sandboxd.Result{}, err
	}
	exit, err := r.watchExit(ctx, deadline.C)
	if err != nil {
		return sandboxd.Result{}, err
	}
	r.res.Duration = time.Since(handover)
	r.res.ExitCode = exit
	if exit == exitKilled {
		r.res.OOMKilled = r.oomKilled(ctx)
	}
	r.res.Truncated = r.s.stdout.truncated || r.s.stderr.truncated
	r.res.Stdout = decode(r.s.stdout.buf)
	r.res.Stderr = decode(r.s.stderr.buf)
	r.res.Classify()
	return r.res, nil
}

// watchOutput reads the output until it ends, a cap is hit, the deadline
// passes or ctx ends; in every case the attach connection is closed after.
func (r *run) watchOutput(ctx context.Context, deadline <-chan time.Time) error {
	defer r.s.close()
	select {
	case <-r.s.done:
		if r.s.err != nil {
			r.log.Warn("attach stream ended with an error", "err", r.s.err)
		}
		if r.s.stdout.truncated || r.s.stderr.truncated {
			r.kill(ctx) // the stream ended right after the cap: it is done
		}
	case <-r.s.capHit:
		r.killAndDrain(ctx)
	case <-deadline:
		r.res.TimedOut = true
		r.killAndDrain(ctx)
	case <-ctx.Done():
		r.s.close()
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
	r.s.drain(drainGrace)
	<-r.s.done
	r.s.close()
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
		case w := <-r.waitC:
			r.waited = true
			if w.Error != nil && w.Error.Message != "" {
				r.log.Warn("docker reported an error with the exit", "err", w.Error.Message)
			}
			return int(w.StatusCode), nil
		case err := <-r.waitE:
			r.waited = true
			if ctx.Err() != nil {
				r.kill(ctx)
				return 0, ctxError(ctx, "runtime.run")
			}
			return 0, r.d.fail(ctx, "runtime.wait", err)
		case <-deadline:
			r.res.TimedOut = true
			r.kill(ctx)
		case <-stuck:
			return 0, sandboxd.Errorf(sandboxd.CodeInternal, "runtime.wait",
				"container %s did not exit within %s of SIGKILL", shortID(r.id), cleanupTimeout)
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
	err := r.d.cli.ContainerKill(ctx, r.id, "KILL")
	switch {
	case err == nil:
	case cerrdefs.IsConflict(err) || cerrdefs.IsNotFound(err):
		r.log.Debug("kill: container already stopped", "err", err)
	default:
		r.log.Warn("kill failed", "err", err)
	}
}

// oomKilled reports whether the kernel's OOM killer ended the container.
func (r *run) oomKilled(ctx context.Context) bool {
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	info, err := r.d.cli.ContainerInspect(ctx, r.id)
	if err != nil {
		r.log.Warn("inspect after exit 137 failed; not reporting OOM", "err", err)
		return false
	}
	return info.State != nil && info.State.OOMKilled
}
