// Package runtime runs programs in hardened, throwaway Docker containers
// through the Docker Engine API: one container per run, created, attached,
// started (ahead of time, in a warm pool, when configured), fed the code on
// stdin, watched against its limits, and always removed after its one run.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"

	"sandboxd"
	"sandboxd/internal/runnerproto"
)

// cleanupTimeout bounds the calls that clean up after a run (kill, remove,
// inspect). They run on a fresh context, so a cancelled request still cleans.
const cleanupTimeout = 15 * time.Second

// pingTimeout bounds the ping that tells a daemon gone from a failed call.
const pingTimeout = 2 * time.Second

// Docker runs each job in a fresh container of one image. It is safe for
// concurrent use.
type Docker struct {
	cli      *client.Client
	cfg      Config
	log      *slog.Logger
	inflight inflight
	// pool holds the warm containers; nil when Config.PoolSize is 0.
	pool *pool
	// bg counts the removals of used containers, for Close to wait for.
	bg tasks
	// environment, when set (NewEnvironments), is the LabelEnvironment of
	// this runner's containers, and Reap touches only those.
	environment string
	// sessions are the live sessions, which Close ends.
	sessions sessionSet
	// ioBase is where the runners' sockets are made (Config.IODir); empty
	// when the attach connection carries their streams.
	ioBase string
}

var _ sandboxd.Runner = (*Docker)(nil)

// New returns a Docker runner for cfg, talking to the daemon that the
// standard DOCKER_* environment variables name (the local socket by default).
// It does not contact the daemon: Health does. With Config.PoolSize > 0 the
// pool starts filling at the first Reap or Run, so a Reap at start-up never
// sees the pool's own containers. A nil log discards.
func New(cfg Config, log *slog.Logger) (*Docker, error) {
	if cfg.Instance == "" {
		cfg.Instance = defaultInstance
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("runtime: docker client: %w", err)
	}
	d := &Docker{
		cli:      cli,
		cfg:      cfg,
		log:      log.With("instance", cfg.Instance),
		inflight: inflight{runs: map[*liveRun]struct{}{}},
	}
	d.ioBase = ioBase(cfg, cli.DaemonHost())
	if cfg.PoolSize > 0 {
		d.pool = newPool(d, cfg.PoolSize, cfg.PoolMax)
	}
	return d, nil
}

// ioBase is where the runners' sockets go (Config.IODir), or "" for the
// attach connection: turned off, another OCI runtime than runc, or a daemon
// that is not on this host.
func ioBase(cfg Config, daemonHost string) string {
	switch {
	case cfg.IODir == ioOff, cfg.OCIRuntime != "" && cfg.OCIRuntime != "runc", !strings.HasPrefix(daemonHost, "unix://"):
		return ""
	case cfg.IODir != "":
		return cfg.IODir
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("sandboxd-io-%d", os.Getuid()))
}

// ioOff is the Config.IODir that keeps the attach connection.
const ioOff = "off"

// Health reports nil when runs can start: the daemon answers, the image is
// present, its runner speaks this service's protocol and it runs the
// environment's languages (Config.Languages), and the configured
// OCI runtime is registered. Otherwise it returns an *sandboxd.Error with
// CodeUnavailable whose message says what to do. Warm containers play no
// part: a run starts its own when the pool has none. A healthy engine ends
// the pool's backoff, so it refills at once after the daemon came back.
func (d *Docker) Health(ctx context.Context) error {
	if err := d.health(ctx); err != nil {
		return err
	}
	if d.pool != nil {
		d.pool.kick()
	}
	return nil
}

// health runs the checks of Health.
func (d *Docker) health(ctx context.Context) error {
	const op = "runtime.health"
	if _, err := d.cli.Ping(ctx); err != nil {
		return d.fail(ctx, op, err)
	}
	if d.ioBase != "" {
		if err := socketBase(d.ioBase); err != nil {
			return sandboxd.Wrap(sandboxd.CodeUnavailable, op, err,
				"the runners' socket directory (runtime.io_dir) is not usable: "+err.Error()+`; name another, or "off"`)
		}
	}
	img, err := d.cli.ImageInspect(ctx, d.cfg.Image)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return d.missingImage(op, err)
		}
		return d.fail(ctx, op, err)
	}
	if img.Config == nil || img.Config.Labels[runnerproto.LabelRunner] != runnerproto.Version {
		have := ""
		if img.Config != nil {
			have = img.Config.Labels[runnerproto.LabelRunner]
		}
		return sandboxd.Errorf(sandboxd.CodeUnavailable, op,
			"image %s has runner protocol %q, this service needs %q: rebuild it with `make image image-data`",
			d.cfg.Image, have, runnerproto.Version)
	}
	if err := d.cfg.languagesError(op, img.Config.Labels); err != nil {
		return err
	}
	if d.cfg.OCIRuntime == "" {
		return nil
	}
	info, err := d.cli.Info(ctx)
	if err != nil {
		return d.fail(ctx, op, err)
	}
	if _, ok := info.Runtimes[d.cfg.OCIRuntime]; !ok {
		have := make([]string, 0, len(info.Runtimes))
		for name := range info.Runtimes {
			have = append(have, name)
		}
		slices.Sort(have)
		return sandboxd.Errorf(sandboxd.CodeUnavailable, op,
			"OCI runtime %q is not registered with Docker (it has %v): register it in /etc/docker/daemon.json or change runtime.oci_runtime",
			d.cfg.OCIRuntime, have)
	}
	return nil
}

// Info describes the engine, the negotiated API version, the image and the
// OCI runtime (the daemon's default when none is configured).
func (d *Docker) Info(ctx context.Context) (sandboxd.RunnerInfo, error) {
	const op = "runtime.info"
	v, err := d.cli.ServerVersion(ctx)
	if err != nil {
		return sandboxd.RunnerInfo{}, d.fail(ctx, op, err)
	}
	rt := d.cfg.OCIRuntime
	if rt == "" {
		info, err := d.cli.Info(ctx)
		if err != nil {
			return sandboxd.RunnerInfo{}, d.fail(ctx, op, err)
		}
		rt = info.DefaultRuntime
	}
	return sandboxd.RunnerInfo{
		Engine:     "docker " + v.Version,
		EngineAPI:  d.cli.ClientVersion(),
		Image:      d.cfg.Image,
		OCIRuntime: rt,
	}, nil
}

// Close ends the runner at shutdown, after the grace period: it ends every
// session, cancels the runs still in flight, kills and removes their
// containers, drains the pool,
// waits (until ctx ends) for those runs to return and for every container to
// be removed, and closes the client. Runs after Close fail with
// CodeUnavailable.
func (d *Docker) Close(ctx context.Context) error {
	flights := d.inflight.close()
	errs := []error{d.closeSessions(ctx)}
	for _, f := range flights {
		f.cancel(errClosing)
	}
	for _, f := range flights {
		if id := f.containerID(); id != "" {
			d.log.Info("killing in-flight run at close", "container", shortID(id))
			errs = append(errs, d.remove(ctx, id))
		}
	}
	if d.pool != nil {
		errs = append(errs, d.pool.close(ctx))
	}
	if err := d.inflight.wait(ctx); err != nil {
		errs = append(errs, fmt.Errorf("runtime: waiting for %d runs: %w", len(flights), err))
	}
	if err := d.bg.wait(ctx); err != nil {
		errs = append(errs, fmt.Errorf("runtime: waiting for containers to be removed: %w", err))
	}
	errs = append(errs, d.cli.Close())
	return errors.Join(errs...)
}

// WaitRemovals waits until the containers of the runs that have returned so far
// are removed (Run removes them in the background, after its answer), or
// until ctx ends. Tests that look for leftovers call it first.
func (d *Docker) WaitRemovals(ctx context.Context) error {
	return d.bg.wait(ctx)
}

// fail turns a failed Engine API call into the service's error: the context's
// own error when ctx ended, CodeUnavailable when the daemon is unreachable
// (or no longer answers), CodeInternal for anything else.
func (d *Docker) fail(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return ctxError(ctx, op)
	}
	if d.cfg.Observe != nil {
		d.cfg.Observe(op, 0, err)
	}
	if dialFailed(err) || !d.answers(ctx) {
		// The message reaches callers, so it names no socket or host; the
		// cause, for the operator's log, does.
		return sandboxd.Wrap(sandboxd.CodeUnavailable, op, fmt.Errorf("docker at %s: %w", d.cli.DaemonHost(), err),
			"Docker is unreachable; try again later")
	}
	return sandboxd.Wrap(sandboxd.CodeInternal, op, err, "Docker Engine API call failed")
}

// dialFailed reports whether err says the daemon could not be reached at
// all. The client marks most such failures, but not a hijacked call's
// (attach), which wraps the dial's own error. The ping that answers would
// ask next is no proof: it may reuse a kept-alive connection to a daemon
// that is shutting down and has already removed its socket.
func dialFailed(err error) bool {
	var op *net.OpError
	return client.IsErrConnectionFailed(err) || (errors.As(err, &op) && op.Op == "dial")
}

// answers reports whether the daemon answers a ping. A call that failed
// in another way than by not connecting (a connection cut in the middle of
// an answer, as when dockerd stops) failed because the daemon went away
// when it no longer answers.
func (d *Docker) answers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pingTimeout)
	defer cancel()
	// A fresh dial first: the ping alone may go over a kept-alive
	// connection that a stopping daemon still serves.
	conn, err := d.cli.Dialer()(ctx)
	if err != nil {
		return false
	}
	conn.Close()
	_, err = d.cli.Ping(ctx)
	return err == nil
}

// shutdownWindow is how long after an unexplained kill the daemon is
// watched for going away: dockerd exits within this once it has stopped
// its containers.
const shutdownWindow = 2 * time.Second

// goesAway reports whether the daemon stops answering within the shutdown
// window, polling its ping.
func (d *Docker) goesAway(ctx context.Context) bool {
	deadline := time.Now().Add(shutdownWindow)
	for time.Now().Before(deadline) {
		if !d.answers(ctx) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// missingImage is the error for an image that is not there: being built
// (buildingImage), or missing, with the fix.
func (d *Docker) missingImage(op string, err error) error {
	if b, ok := readBuild(d.cfg.BuildStatusDir, d.cfg.Image, time.Now()); ok {
		return d.buildingImage(op, b, time.Now())
	}
	return sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, fmt.Sprintf(
		"image %s is missing: build it with `make image image-data` (the python and data images)", d.cfg.Image))
}

// Bounds of the Retry-After of a run refused while its image is being
// built: often enough that a client sees it ready soon after, seldom enough
// that a waiting client does not poll; a late build is asked about again
// after lateBuildRetry.
const (
	minBuildRetry  = 5 * time.Second
	maxBuildRetry  = 10 * time.Minute
	lateBuildRetry = 30 * time.Second
)

// buildingImage is the error of a run (and an environment's health) while
// its image is being built: CodeUnavailable with RetryAfter, the cause an
// ImageBuild.
func (d *Docker) buildingImage(op string, b build, now time.Time) error {
	left := b.readyAt.Sub(now)
	retry := min(max(left, minBuildRetry), maxBuildRetry)
	when := fmt.Sprintf("it should be ready in about %d s", int(left.Round(time.Second).Seconds()))
	if left <= 0 {
		retry = lateBuildRetry
		when = fmt.Sprintf("it is taking longer than expected (started %d s ago); try again in a moment", int(now.Sub(b.started).Seconds()))
	}
	return &sandboxd.Error{
		Code:       sandboxd.CodeUnavailable,
		Op:         op,
		Message:    fmt.Sprintf("image %s is being built: %s", d.cfg.Image, when),
		Err:        &sandboxd.ImageBuild{Environment: d.environment, Image: d.cfg.Image, Started: b.started, ReadyAt: b.readyAt},
		RetryAfter: retry,
	}
}

// imageBuild returns the build of the image under way, when the image is
// missing and being built, else nil (present, missing, or the daemon
// unreachable: Health says which).
func (d *Docker) imageBuild(ctx context.Context) *sandboxd.ImageBuild {
	if _, err := d.cli.ImageInspect(ctx, d.cfg.Image); err == nil || !cerrdefs.IsNotFound(err) {
		return nil
	}
	var ib *sandboxd.ImageBuild
	if errors.As(d.missingImage("runtime.info", nil), &ib) {
		return ib
	}
	return nil
}

// errClosing is the cause of the contexts of runs that Close cancelled.
var errClosing = errors.New("runtime: closing")

// ctxError is the error of a run whose context ended: the service shutting
// down is CodeUnavailable; the caller going away is the context's own error.
func ctxError(ctx context.Context, op string) error {
	if errors.Is(context.Cause(ctx), errClosing) {
		return sandboxd.Wrap(sandboxd.CodeUnavailable, op, errClosing, "the service is shutting down")
	}
	return fmt.Errorf("%s: %w", op, ctx.Err())
}
