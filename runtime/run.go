package runtime

import (
	"context"
	"errors"
	"log/slog"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"sandboxd"
	"sandboxd/internal/runnerproto"
)

// drainGrace bounds how long output is still read after a deadline kill,
// counted from the deadline itself, not from when the run saw it (a loaded
// host wakes the service late, 0.2 s seen): long enough for what the
// program printed before it died to come through, short enough that the
// kill is answered within timeout + 0.5 s on a busy host
// (docs/performance.md, "Kills under load"). The stream usually ends
// sooner, once the kill has gone through.
const drainGrace = 250 * time.Millisecond

// drainFloor is the least time output is read after the kill, however late
// the deadline was seen: what the program wrote is in the buffers already.
const drainFloor = 50 * time.Millisecond

// drainEnd is when reading stops after a deadline kill seen at now, for a
// deadline that fired at fired: drainGrace after it, and at least
// drainFloor after now.
func drainEnd(fired, now time.Time) time.Time {
	if end := fired.Add(drainGrace); end.After(now.Add(drainFloor)) {
		return end
	}
	return now.Add(drainFloor)
}

// capDrainGrace is drainGrace after an output-cap kill: the capped stream
// is complete already, only the other one may still bring a few lines.
const capDrainGrace = 100 * time.Millisecond

// exitGrace bounds how long the removal of a run's container waits for the
// container to exit by itself once its runner reported the program's end
// (exitWait): the runner exits right after its end marker, and a container
// removed after its exit is not killed, a runc kill saved per answer.
const exitGrace = time.Second

// exitKilled is the exit status of a process ended by SIGKILL (128 + 9).
const exitKilled = 137

// exitTerminated is the exit status of a process ended by SIGTERM (128 + 15),
// the signal dockerd stops containers with.
const exitTerminated = 143

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
// exit. job.Files (checked again against Config.MaxFiles, MaxFilesBytes and
// the naming rules) are written into /tmp before the program starts; the
// regular files it created or changed there come back in Result.Files,
// bounded by the same caps, only from a run whose runner reported its end.
// Whatever happens, the container is removed afterwards, in the background
// (Close waits for it), once it has exited when its runner reported the
// end (exitWait). A container that turns out to have died before its
// program started is replaced by a fresh one, once.
//
// A program that fails, loops, floods or runs out of memory is a Result.
// Errors are the service's: CodeInvalid or CodeTooLarge for files in that
// break the rules or the caps, CodeInvalid for a language not canonical
// (job.Language: "" is python; an image that does not run the language
// answers the program's error, exit status 1). A typescript job is
// transpiled first (transpile), and its syntax error answered without a
// container. CodeUnavailable when Docker is unreachable, the
// image is missing or the runner is closing; CodeInternal for other Engine
// API failures; the context's error (wrapped) when ctx ends first.
func (d *Docker) Run(ctx context.Context, job sandboxd.Job) (sandboxd.Result, error) {
	if err := checkFilesIn(job.Files, d.cfg.MaxFiles, int64(d.cfg.MaxFilesBytes)); err != nil {
		return sandboxd.Result{}, err
	}
	lang, err := headerLanguage("runtime.run", job.Language)
	if err != nil {
		return sandboxd.Result{}, err
	}
	job.Language = lang
	job, syntax := transpile(job, int64(d.cfg.MaxOutputBytes))
	if syntax != nil {
		return *syntax, nil
	}
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
		res.Gone = b.stoppedOr(d.retireWithin(b, r.exitWait(err)))
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
// The pool records its take in ctx's phases; a start of the run's own is
// recorded here (sandboxd.PhaseStart), the pool's miss included.
func (d *Docker) acquire(ctx context.Context, jobID string, pooled bool, log *slog.Logger) (*box, error) {
	began := time.Now()
	if pooled {
		if b, ok, err := d.pool.take(ctx); ok || err != nil {
			return b, err
		}
	}
	b, err := d.prepare(ctx, jobID, log)
	if err == nil {
		sandboxd.PhasesFrom(ctx).Since(sandboxd.PhaseStart, began)
		if d.pool != nil {
			d.pool.kick() // the engine works again: the pool need not wait out its backoff
		}
	}
	return b, err
}

// run is one program in one box.
type run struct {
	d      *Docker
	b      *box
	log    *slog.Logger
	killed bool
	// reported is set once the runner's end marker was read: the program
	// has ended and the runner is exiting.
	reported bool
	res      sandboxd.Result
}

// exitWait is how long the container's removal waits for it to exit by
// itself after a run that ended in err: up to exitGrace when its runner
// reported the end, so that the removal finds it stopped and needs no
// kill, and never past the run's time limit; else nothing (a kill of ours
// is awaited anyway). A program can delay its interpreter's exit past the
// end marker (a finalizer that spins), never past its own limit.
func (r *run) exitWait(err error) time.Duration {
	if err != nil || !r.reported || r.killed {
		return 0
	}
	return min(exitGrace, max(r.d.cfg.Timeout-r.res.Duration, 0))
}

// supervise hands the code over and watches the run to its end: the
// runner's end marker, our own kill (the deadline, the output cap: the
// answer does not wait for the container to stop), or else the container's
// exit.
func (r *run) supervise(ctx context.Context, job sandboxd.Job) (sandboxd.Result, error) {
	deadline := newDeadline(r.d.cfg.Timeout, r.d.cfg.Timeout+ackGrace, r.b.s.out.ackC)
	defer deadline.Stop()
	r.b.s.send(r.b.proto.message(job.Language, job.Code, job.Stdin, job.Files))
	if err := r.watchOutput(ctx, deadline.C); err != nil {
		return sandboxd.Result{}, err
	}
	// Reading has ended: the output no longer changes.
	out := r.b.s.out
	if r.res.TimedOut && !out.acked() {
		return sandboxd.Result{}, errNotStarted // the runner never took its program
	}
	if rep, ok := out.ended(); ok && !r.res.TimedOut {
		r.reported = true
		r.res.ExitCode = rep.Status
		r.res.Usage = &sandboxd.Usage{CPU: time.Duration(rep.CPUMS) * time.Millisecond, MaxRSSKB: rep.MaxRSSKB}
		r.filesOut(rep, out.files.buf)
	} else if r.killed {
		r.res.ExitCode = r.killedExit()
	} else if err := r.awaitEnd(ctx, deadline.C); err != nil {
		return sandboxd.Result{}, err
	}
	r.res.Duration = time.Since(deadline.started())
	out.finish()
	r.res.Truncated = out.truncated()
	r.res.Stdout = decode(out.stdout.buf)
	r.res.Stderr = decode(out.stderr.buf)
	r.res.Classify()
	out.addPhases(sandboxd.PhasesFrom(ctx), deadline.handover)
	return r.res, nil
}

// filesOut fills in the files out from the files section the runner sent
// after its end marker. A section that does not parse (a program can forge
// one) gives no files, and FilesTruncated.
func (r *run) filesOut(rep runnerproto.EndReport, section []byte) {
	files, listed, err := parseFiles(section, r.d.cfg.MaxFiles, int64(r.d.cfg.MaxFilesBytes))
	if err != nil {
		r.log.Warn("the files out were not read", "err", err)
	}
	r.res.Files = files
	r.res.FilesTruncated = rep.FilesCut || listed || err != nil
}

// awaitEnd judges a run whose output ended without the end marker and
// without a kill of ours, by the container's exit.
func (r *run) awaitEnd(ctx context.Context, deadline <-chan time.Time) error {
	exit, err := r.watchExit(ctx, deadline)
	if err != nil {
		return err
	}
	if !r.b.s.out.acked() && !r.killed {
		return errNotStarted
	}
	r.res.ExitCode = exit
	if r.killed || (exit != exitKilled && exit != exitTerminated) {
		return nil // our kill, or an end no one but the program causes (a segfault, abort)
	}
	return r.judgeSignal(ctx, exit)
}

// judgeSignal decides what ended a container by SIGKILL or SIGTERM that
// was not ours: the kernel's OOM killer (SIGKILL, by Docker's flag or
// event), the program itself, or dockerd stopping, which signals every
// container at shutdown and then goes away. That last is our failure, not
// the program's answer, and must not be delivered (or charged). The two
// questions are asked at once, so a program's own SIGKILL is answered
// within shutdownWindow.
func (r *run) judgeSignal(ctx context.Context, exit int) error {
	away := make(chan bool, 1)
	go func() { away <- r.d.goesAway(ctx) }()
	if exit == exitKilled {
		oom, err := r.oomKilled(ctx)
		if err != nil {
			return err
		}
		if oom {
			r.res.OOMKilled = true
			return nil
		}
	}
	if <-away {
		return sandboxd.Errorf(sandboxd.CodeUnavailable, "runtime.run",
			"Docker stopped during the run; retry once it is back")
	}
	return nil
}

// killedExit is the exit status of a run we killed: the container's own
// when its exit is already known (the program may have ended just before
// the kill), else SIGKILL's. The answer does not wait for the exit.
func (r *run) killedExit() int {
	select {
	case <-r.b.exited:
		if r.b.waitErr == nil {
			return r.b.exitCode
		}
	default:
	}
	return exitKilled
}

// watchOutput reads the output until it ends (or the end marker comes), a
// cap is hit, the deadline passes, the daemon goes or ctx ends; in every
// case the link is closed after.
func (r *run) watchOutput(ctx context.Context, deadline <-chan time.Time) error {
	s := r.b.s
	defer s.close()
	exited := r.b.exited
	for {
		select {
		case <-s.done:
			if s.err != nil {
				r.log.Warn("the runner's stream ended with an error", "err", s.err)
			}
			if s.out.truncated() {
				// The stream ended right after a cap, or demux stopped reading
				// past sentBound: close it before the kill, since a connection
				// left unread stalls dockerd's copy and with it the kill.
				s.close()
				r.killLater(ctx)
			}
		case <-s.capHit:
			r.killAndDrain(ctx, time.Now().Add(capDrainGrace))
		case fired := <-deadline:
			r.res.TimedOut = true
			r.killAndDrain(ctx, drainEnd(fired, time.Now()))
			// Output the drain found over the cap was written before the kill:
			// the program reached the output limit first, and only reading it
			// lagged (a loaded host). It is an output_limit, not a timeout.
			if s.out.truncated() {
				r.res.TimedOut = false
			}
		case <-exited:
			if r.b.waitErr == nil {
				exited = nil // the output ends with the container
				continue
			}
			// The wait for the exit broke: the daemon went. The attach
			// connection ends with it; the runner's sockets do not, but a
			// run whose container no one can kill or judge is the service's
			// failure all the same.
			s.close()
			r.killLater(ctx)
			return r.d.fail(ctx, "runtime.wait", r.b.waitErr)
		case <-ctx.Done():
			s.close()
			r.kill(ctx)
			return ctxError(ctx, "runtime.run")
		}
		return nil
	}
}

// killAndDrain kills the container while reading on: what the program
// wrote before it died is kept; reading stops at the end of the stream (the
// kill has gone through) or at until, whichever comes first. The
// kill runs on in the background: the answer does not wait for the
// container to stop, only its removal does.
func (r *run) killAndDrain(ctx context.Context, until time.Time) {
	r.killLater(ctx)
	r.b.s.drain(until)
	<-r.b.s.done
	r.b.s.close()
}

// watchExit waits for the container's exit status. A program that closed
// its output but runs on is killed at the deadline like any other, and
// answered at once.
func (r *run) watchExit(ctx context.Context, deadline <-chan time.Time) (int, error) {
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
		r.killLater(ctx)
		return r.killedExit(), nil
	case <-ctx.Done():
		r.kill(ctx)
		return 0, ctxError(ctx, "runtime.run")
	}
}

// kill sends SIGKILL to the whole container and waits for the call. The
// Engine API call returns once the container has exited (or after the
// daemon's own 2 s wait).
func (r *run) kill(ctx context.Context) {
	r.killed = true
	r.d.sendKill(ctx, r.b.id, r.log)
}

// killLater sends SIGKILL to the whole container in the background; the
// box's killing channel closes when the call is done, and its removal
// waits for that (Close waits for both).
func (r *run) killLater(ctx context.Context) {
	r.killed = true
	killing := make(chan struct{})
	r.b.killing = killing
	ticket := r.d.bg.add()
	go func() {
		defer r.d.bg.done(ticket)
		defer close(killing)
		r.d.sendKill(ctx, r.b.id, r.log)
	}()
}

// sendKill sends SIGKILL to a container, on a cleanup context of ctx. One
// already stopped is no error.
func (d *Docker) sendKill(ctx context.Context, id string, log *slog.Logger) {
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	err := d.cli.ContainerKill(ctx, id, "KILL")
	switch {
	case err == nil:
	case cerrdefs.IsConflict(err) || cerrdefs.IsNotFound(err):
		log.Debug("kill: container already stopped", "err", err)
	default:
		log.Warn("kill failed", "err", err)
	}
}
