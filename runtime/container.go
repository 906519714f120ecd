package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"sandboxd"
)

// box is one started container waiting for its program: attached, its exit
// awaited, its runner blocked on stdin. A box runs one program at most, then
// it is retired: no container ever runs two programs.
type box struct {
	id    string
	proto *protocol
	s     *stream
	log   *slog.Logger
	// exited is closed once the container's exit is known (exitCode,
	// exitMsg) or the wait for it failed (waitErr).
	exited   chan struct{}
	exitCode int
	exitMsg  string
	waitErr  error
	// started is when the container was started (its events come after).
	started time.Time
	// stopWait ends the wait for the exit; called once the box is removed.
	stopWait context.CancelFunc
	// left is closed when the box leaves the pool's idle list.
	left chan struct{}
	// killing, when not nil, is closed once a kill sent in the background
	// (the run was answered first) is done; the removal waits for it.
	killing chan struct{}
}

// prepare creates a container for the job (poolJob for the pool), attaches
// to it, awaits its exit and starts it: the runner inside then waits for its
// program. On failure nothing is left behind.
func (d *Docker) prepare(ctx context.Context, jobID string, log *slog.Logger) (*box, error) {
	return d.prepareAs(ctx, jobID, "", log)
}

// prepareAs is prepare for a container of the kind (its LabelKind; ""
// for a run's, which carries none).
func (d *Docker) prepareAs(ctx context.Context, jobID, kind string, log *slog.Logger) (*box, error) {
	began := time.Now()
	var err error
	sp := newSpec(d.cfg, sandboxd.Job{ID: jobID})
	if d.environment != "" {
		sp.config.Labels[LabelEnvironment] = d.environment
	}
	if kind != "" {
		sp.config.Labels[LabelKind] = kind
	}
	var sl *socketLink
	if d.ioBase != "" {
		if sl, err = newSocketLink(d.ioBase); err != nil {
			return nil, sandboxd.Wrap(sandboxd.CodeInternal, "runtime.prepare", err,
				"cannot make the sandbox's socket: set runtime.io_dir to a directory the service may write, or off")
		}
		sp.useSocket(sl)
	}
	id, err := d.create(ctx, sp, log)
	if err != nil {
		if sl != nil {
			sl.Close()
		}
		return nil, err
	}
	b, err := d.start(ctx, id, sl, log.With("container", shortID(id)))
	if err != nil {
		d.removeLater(id, log, nil, nil)
		return nil, err
	}
	if d.cfg.Observe != nil {
		d.cfg.Observe("start", time.Since(began), nil)
	}
	return b, nil
}

// start attaches (unless the runner's socket link sl carries its streams),
// registers for the next exit, and starts the container, in that order:
// attaching first loses no output; waiting first misses no exit.
func (d *Docker) start(ctx context.Context, id string, sl *socketLink, log *slog.Logger) (*box, error) {
	proto := newProtocol(d.cfg.MaxFiles, int64(d.cfg.MaxFilesBytes))
	var s *stream
	if sl != nil {
		s = newStream(sl, int(d.cfg.MaxOutputBytes), proto)
	} else {
		var err error
		if s, err = d.attach(ctx, id, proto); err != nil {
			return nil, d.fail(ctx, "runtime.attach", err)
		}
	}
	// The wait lives as long as the box, not as the request that made it.
	life, stopWait := context.WithCancel(context.WithoutCancel(ctx))
	// ContainerWait returns once the daemon has registered the wait.
	waitC, waitE := d.cli.ContainerWait(life, id, container.WaitConditionNextExit)
	select {
	case err := <-waitE:
		s.close()
		stopWait()
		return nil, d.fail(ctx, "runtime.wait", err)
	default:
	}
	b := &box{id: id, proto: proto, s: s, log: log, exited: make(chan struct{}), stopWait: stopWait}
	go b.awaitExit(waitC, waitE)
	b.started = time.Now()
	var err error
	if ctx.Err() == nil {
		err = d.cli.ContainerStart(ctx, id, container.StartOptions{})
	}
	if ctx.Err() != nil || err != nil {
		s.close()
		stopWait()
		if ctx.Err() != nil {
			return nil, ctxError(ctx, "runtime.start")
		}
		return nil, d.fail(ctx, "runtime.start", err)
	}
	if sl != nil {
		sl.stopWith(b.exited)
	}
	s.read()
	return b, nil
}

// awaitExit records the container's exit, or the failure of the wait.
func (b *box) awaitExit(waitC <-chan container.WaitResponse, waitE <-chan error) {
	defer close(b.exited)
	select {
	case w := <-waitC:
		b.exitCode = int(w.StatusCode)
		if w.Error != nil {
			b.exitMsg = w.Error.Message
		}
	case err := <-waitE:
		b.waitErr = err
	}
}

// dead reports whether the container has exited or its output ended: a box
// that is no use for a program.
func (b *box) dead() bool {
	select {
	case <-b.exited:
		return true
	default:
		return b.s.ended()
	}
}

// exitState describes how the container ended, for logs.
func (b *box) exitState() string {
	select {
	case <-b.exited:
		if b.waitErr != nil {
			return "unknown: " + b.waitErr.Error()
		}
		return fmt.Sprintf("status %d", b.exitCode)
	default:
		return "output closed"
	}
}

// retire closes a box's attach connection and removes its container in the
// background (a forced remove kills it first), once a kill of its run is
// done. Close waits for it. The channel it returns is closed once the
// removal is over (done or given up).
func (d *Docker) retire(b *box) <-chan struct{} {
	return d.retireWithin(b, 0)
}

// retireWithin is retire for a container that may exit by itself: when no
// kill of ours is under way, its removal first waits up to wait for the
// container's exit.
func (d *Docker) retireWithin(b *box, wait time.Duration) <-chan struct{} {
	var before <-chan struct{}
	if b.killing != nil {
		before = b.killing
	} else if wait > 0 {
		before = closedWithin(b.exited, wait)
	}
	return d.retireAfter(b, before)
}

// retireAfter is retire for a container that must not be removed before
// the channel before (when not nil) is closed: a session's, until it is
// thawed.
func (d *Docker) retireAfter(b *box, before <-chan struct{}) <-chan struct{} {
	b.s.close()
	gone := make(chan struct{})
	d.removeLater(b.id, b.log, before, func() {
		b.stopWait()
		close(gone)
	})
	return gone
}

// stoppedOr returns a channel closed once b's container has stopped (the
// daemon reported its exit: none of its processes run, and its memory,
// tmpfs included, is freed) or gone is closed, whichever comes first: what
// a run's sandbox slot waits for (sandboxd.Result.Gone). Its removal may
// still be under way; it needs neither memory nor a slot. A wait for the
// exit that failed (the daemon restarting) tells nothing: then only gone.
func (b *box) stoppedOr(gone <-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		defer close(out)
		select {
		case <-b.exited:
			if b.waitErr != nil {
				<-gone
			}
		case <-gone:
		}
	}()
	return out
}

// closedWithin returns a channel closed once c is closed or after d,
// whichever comes first.
func closedWithin(c <-chan struct{}, d time.Duration) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		defer close(out)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-c:
		case <-t.C:
		}
	}()
	return out
}

// removeRetryFor is how long a removal is tried again while the daemon is
// unreachable: long enough for dockerd to stop (it kills every container
// first) and start again.
const removeRetryFor = 2 * time.Minute

// removeLater force-removes a container in the background, after wait is
// closed (when not nil), then calls after (when not nil). While the daemon
// is unreachable (a restart) it tries again, for up to removeRetryFor; a
// removal that still fails is logged and counted (Config.Observe, op
// runtime.remove), and Reap removes the container at the next start. One
// slower than cleanupTimeout is logged. Close waits for it.
func (d *Docker) removeLater(id string, log *slog.Logger, wait <-chan struct{}, after func()) {
	ticket := d.bg.add()
	go func() {
		defer d.bg.done(ticket)
		if after != nil {
			defer after()
		}
		began := time.Now()
		if wait != nil {
			<-wait
		}
		err := d.removeRetrying(id)
		took := time.Since(began)
		switch {
		case err != nil:
			log.Warn("removing the container failed; Reap will retry at the next start", "err", err, "took", took)
			if d.cfg.Observe != nil {
				d.cfg.Observe("runtime.remove", 0, err)
			}
		case took > cleanupTimeout:
			log.Warn("removing the container was slow", "took", took)
		default:
			log.Debug("container removed", "took", took)
		}
	}()
}

// removeRetrying force-removes a container, trying again while the daemon
// is unreachable or slower than an attempt's cleanupTimeout, for up to
// removeRetryFor.
func (d *Docker) removeRetrying(id string) error {
	giveUp := time.Now().Add(removeRetryFor)
	for pause := 100 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		err := d.remove(ctx, id)
		cancel()
		// An attempt that reached its own deadline is tried again too:
		// dockerd goes on removing, and the next attempt waits for it; so
		// is one whose connection was cut mid-call (the daemon going away).
		again := dialFailed(err) || errors.Is(err, context.DeadlineExceeded) ||
			errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
		if err == nil || !again || time.Now().After(giveUp) {
			return err
		}
		time.Sleep(pause)
	}
}

// create creates a container and returns its ID. The call itself is not
// cancelled with ctx: a create cancelled on our side may still complete on
// the daemon's, after any attempt to remove it. When ctx ends meanwhile, the
// new container is removed at once; when the call fails after reaching the
// daemon, whatever it may have made under the spec's name is removed in the
// background.
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
		// Unless the call never reached the daemon, it may have created the
		// container though its answer was lost (the connection cut, the
		// daemon gone mid-call): removed by its unique name once the daemon
		// answers again; one never made is no error.
		if !dialFailed(err) {
			d.removeLater(sp.name, log, nil, nil)
		}
		return "", d.fail(ctx, op, err)
	}
	if ctx.Err() != nil {
		d.removeLater(resp.ID, log, nil, nil)
		return "", ctxError(ctx, op)
	}
	for _, w := range resp.Warnings {
		log.Warn("docker warned at create", "warning", w)
	}
	return resp.ID, nil
}

// removeConflictPause is how often remove asks again while another removal
// of the same container is in progress.
const removeConflictPause = 50 * time.Millisecond

// remove force-removes a container and returns once it is gone. One already
// gone is no error. One that another removal is taking away (Close and the
// run's own cleanup may race, and a call of ours given up at its deadline
// goes on in dockerd) is asked again until it is gone, so no caller that
// returns has left a container "removing": the daemon answers such a call
// at once with a conflict, and removes one whose other removal failed.
func (d *Docker) remove(ctx context.Context, id string) error {
	for {
		err := d.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		if !cerrdefs.IsConflict(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for another removal of the container: %w", context.Cause(ctx))
		case <-time.After(removeConflictPause):
		}
	}
}

// cleanupContext is a context for cleaning up after ctx: it keeps ctx's
// values but not its cancellation, and ends after cleanupTimeout.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}
