package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"sandboxd"
)

// LabelEnvironment holds the name of the environment a container of
// Environments runs (one runner's containers each): Reap and Close of one
// environment never touch another's, while a restart of the service reaps
// the leftovers of every environment of its instance.
const LabelEnvironment = "io.sandboxd.environment"

// Environment is one environment of Environments: the name a job gives
// (sandboxd.Job.Environment) and the configuration of its containers.
type Environment struct {
	// Name is the environment's name, e.g. "python" or "data".
	Name string
	// Config is its runner's configuration: image, limits, pool, and the
	// keys every environment shares (OCI runtime, output cap, instance).
	Config Config
}

// envRunner is what Environments needs of each environment's runner;
// *Docker is one, unit tests use fakes.
type envRunner interface {
	sandboxd.Runner
	// reapInstance removes every container of the instance, of any
	// environment, and returns how many.
	reapInstance(ctx context.Context) (int, error)
	// imageBuild returns the build of its image under way, or nil.
	imageBuild(ctx context.Context) *sandboxd.ImageBuild
	// startPool starts filling the warm pool, if there is one.
	startPool()
	Close(ctx context.Context) error
	PoolStats() PoolStats
	// openSession starts a session in this environment, in language.
	openSession(ctx context.Context, language string) (sandboxd.SessionContainer, error)
}

// Environments runs each job in the runner of its environment
// (Job.Environment, "" meaning sandboxd.DefaultEnvironment): one Docker
// runner per environment, with its own image, limits and warm pool, the
// warm pools sharing one memory budget. It is safe for concurrent use.
type Environments struct {
	// names are the environments, the default first.
	names   []string
	runners map[string]envRunner
}

var (
	_ sandboxd.Runner        = (*Environments)(nil)
	_ sandboxd.SessionEngine = (*Environments)(nil)
)

// NewEnvironments returns the runners of envs, which must include
// sandboxd.DefaultEnvironment. Their warm containers hold at most
// poolMemory bytes together, each counted at its environment's measured
// resident size (its memory limit until measured); poolMemory <= 0 sets
// no bound. Like New, it does not contact the daemon.
func NewEnvironments(envs []Environment, poolMemory int64, log *slog.Logger) (*Environments, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	budget := newMemoryBudget(poolMemory)
	runners := map[string]envRunner{}
	var names []string
	for _, env := range envs {
		d, err := New(env.Config, log.With("environment", env.Name))
		if err != nil {
			for _, r := range runners {
				_ = r.Close(context.Background())
			}
			return nil, fmt.Errorf("runtime: environment %s: %w", env.Name, err)
		}
		d.environment = env.Name
		if d.pool != nil {
			d.pool.budget = budget
		}
		runners[env.Name] = d
		names = append(names, env.Name)
	}
	return newEnvironments(names, runners)
}

// newEnvironments returns the Environments of the runners, by name.
func newEnvironments(names []string, runners map[string]envRunner) (*Environments, error) {
	if _, ok := runners[sandboxd.DefaultEnvironment]; !ok {
		return nil, fmt.Errorf("runtime: no %s environment; it is the default", sandboxd.DefaultEnvironment)
	}
	ordered := []string{sandboxd.DefaultEnvironment}
	for _, n := range names {
		if n != sandboxd.DefaultEnvironment {
			ordered = append(ordered, n)
		}
	}
	return &Environments{names: ordered, runners: runners}, nil
}

// Names returns the environments' names, the default first.
func (e *Environments) Names() []string { return append([]string(nil), e.names...) }

// Run runs the job in its environment's runner. An environment that is not
// configured is CodeInvalid, naming the configured ones (the API refuses
// it before; this holds for every caller).
func (e *Environments) Run(ctx context.Context, job sandboxd.Job) (sandboxd.Result, error) {
	r, err := e.runner(job.Environment)
	if err != nil {
		return sandboxd.Result{}, err
	}
	return r.Run(ctx, job)
}

// OpenSession starts a session in the environment's runner (Docker.Open),
// its runner switched into language; an environment that is not configured
// is CodeInvalid, as for Run.
func (e *Environments) OpenSession(ctx context.Context, environment, language string) (sandboxd.SessionContainer, error) {
	r, err := e.runner(environment)
	if err != nil {
		return nil, err
	}
	return r.openSession(ctx, language)
}

// runner returns the runner of the environment ("" meaning the default),
// or CodeInvalid naming the configured ones.
func (e *Environments) runner(name string) (envRunner, error) {
	if name == "" {
		name = sandboxd.DefaultEnvironment
	}
	r, ok := e.runners[name]
	if !ok {
		return nil, sandboxd.Errorf(sandboxd.CodeInvalid, "runtime.environment",
			"unknown environment %q; this service has %s", name, strings.Join(e.names, ", "))
	}
	return r, nil
}

// Health reports nil when every environment can start runs; a
// *sandboxd.Building when the only ones that cannot are environments (not
// the default) whose images are being built; otherwise an error
// (CodeUnavailable when an environment's engine or image is, as
// Docker.Health says) whose message names each environment that cannot
// and why. An environment that cannot run affects no other's runs.
func (e *Environments) Health(ctx context.Context) error {
	each := e.healthEach(ctx)
	var msgs []string
	var first error
	var builds []*sandboxd.Error
	for _, name := range e.names {
		err := each[name]
		if err == nil {
			continue
		}
		msgs = append(msgs, "environment "+name+": "+sandboxd.ErrorMessage(err))
		var ib *sandboxd.ImageBuild
		var refusal *sandboxd.Error
		if name != sandboxd.DefaultEnvironment && errors.As(err, &ib) && errors.As(err, &refusal) {
			builds = append(builds, refusal)
		} else if first == nil {
			first = err
		}
	}
	switch {
	case first != nil:
		return sandboxd.Wrap(sandboxd.ErrorCode(first), "runtime.health", first, strings.Join(msgs, "; "))
	case builds != nil:
		return &sandboxd.Building{Refusals: builds}
	}
	return nil
}

// healthEach checks every environment at once and returns each one's
// Health, by name (nil when it can start runs).
func (e *Environments) healthEach(ctx context.Context) map[string]error {
	out := make(map[string]error, len(e.names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range e.names {
		wg.Go(func() {
			err := e.runners[name].Health(ctx)
			mu.Lock()
			out[name] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// Info describes the engine and the default environment's image, and the
// builds under way of the other environments' images.
func (e *Environments) Info(ctx context.Context) (sandboxd.RunnerInfo, error) {
	info, err := e.runners[sandboxd.DefaultEnvironment].Info(ctx)
	if err != nil {
		return info, err
	}
	for _, name := range e.names[1:] {
		if ib := e.runners[name].imageBuild(ctx); ib != nil {
			info.Building = append(info.Building, *ib)
		}
	}
	return info, nil
}

// Reap removes every container of the instance, of every environment
// (those of an environment since removed from the configuration too), and
// then starts the warm pools. Call it at start-up, before the first Run.
func (e *Environments) Reap(ctx context.Context) (int, error) {
	n, err := e.runners[sandboxd.DefaultEnvironment].reapInstance(ctx)
	for _, name := range e.names {
		e.runners[name].startPool()
	}
	return n, err
}

// Close closes every environment's runner at once (Docker.Close).
func (e *Environments) Close(ctx context.Context) error {
	errs := make([]error, len(e.names))
	var wg sync.WaitGroup
	for i, name := range e.names {
		wg.Go(func() {
			if err := e.runners[name].Close(ctx); err != nil {
				errs[i] = fmt.Errorf("environment %s: %w", name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// PoolStats returns the warm pools' snapshots summed over the
// environments.
func (e *Environments) PoolStats() PoolStats {
	var sum PoolStats
	for _, name := range e.names {
		s := e.runners[name].PoolStats()
		sum.Target += s.Target
		sum.Idle += s.Idle
		sum.Starting += s.Starting
		sum.Hits += s.Hits
		sum.Misses += s.Misses
		sum.Started += s.Started
		sum.Retired += s.Retired
	}
	return sum
}
