package runtime

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd"
)

// fakeEnv is an environment's runner that records what it was asked.
type fakeEnv struct {
	name   string
	health error
	stats  PoolStats

	mu     sync.Mutex
	jobs   []string
	reaped int
	pooled bool
	closed bool
	opened int
	// languages are the languages of the sessions opened, in order.
	languages []string
}

func (f *fakeEnv) Run(_ context.Context, job sandboxd.Job) (sandboxd.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs = append(f.jobs, job.ID)
	return sandboxd.Result{Stdout: f.name, Status: sandboxd.StatusOK}, nil
}

func (f *fakeEnv) Health(context.Context) error { return f.health }

func (f *fakeEnv) Info(context.Context) (sandboxd.RunnerInfo, error) {
	return sandboxd.RunnerInfo{Engine: "fake", Image: f.name + "-image"}, nil
}

func (f *fakeEnv) imageBuild(context.Context) *sandboxd.ImageBuild {
	var ib *sandboxd.ImageBuild
	if errors.As(f.health, &ib) {
		return ib
	}
	return nil
}

func (f *fakeEnv) reapInstance(context.Context) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reaped++
	return 3, nil
}

func (f *fakeEnv) startPool() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pooled = true
}

func (f *fakeEnv) Close(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeEnv) PoolStats() PoolStats { return f.stats }

func (f *fakeEnv) openSession(_ context.Context, language string) (sandboxd.SessionContainer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened++
	f.languages = append(f.languages, language)
	return nil, nil
}

// mustFakeEnvironments returns Environments over fakes of python and data.
func mustFakeEnvironments(t *testing.T) (*Environments, *fakeEnv, *fakeEnv) {
	t.Helper()
	py := &fakeEnv{name: "python", stats: PoolStats{Target: 4, Idle: 3, Starting: 1, Hits: 10, Misses: 1, Started: 20, Retired: 3}}
	data := &fakeEnv{name: "data", stats: PoolStats{Target: 1, Idle: 1, Hits: 2, Started: 4, Retired: 1}}
	e, err := newEnvironments([]string{"data", "python"}, map[string]envRunner{"python": py, "data": data})
	if err != nil {
		t.Fatal(err)
	}
	return e, py, data
}

// TestEnvironmentsDispatch: a job runs in the runner its environment names,
// "" in python's; an unknown one is CodeInvalid listing the environments.
func TestEnvironmentsDispatch(t *testing.T) {
	e, py, data := mustFakeEnvironments(t)
	for _, tc := range []struct{ env, want string }{{"", "python"}, {"python", "python"}, {"data", "data"}} {
		res, err := e.Run(context.Background(), sandboxd.Job{ID: "j-" + tc.env, Environment: tc.env})
		if err != nil || res.Stdout != tc.want {
			t.Errorf("environment %q: ran in %q (%v), want %q", tc.env, res.Stdout, err, tc.want)
		}
	}
	if !slices.Equal(py.jobs, []string{"j-", "j-python"}) || !slices.Equal(data.jobs, []string{"j-data"}) {
		t.Errorf("python ran %v, data ran %v", py.jobs, data.jobs)
	}
	_, err := e.Run(context.Background(), sandboxd.Job{ID: "x", Environment: "gpu"})
	if sandboxd.ErrorCode(err) != sandboxd.CodeInvalid || !strings.Contains(sandboxd.ErrorMessage(err), `unknown environment "gpu"; this service has python, data`) {
		t.Errorf("unknown environment: %v", err)
	}
	if got := e.Names(); !slices.Equal(got, []string{"python", "data"}) {
		t.Errorf("names %v, want the default first", got)
	}
	if _, err := newEnvironments([]string{"data"}, map[string]envRunner{"data": data}); err == nil {
		t.Error("environments without python were accepted")
	}
}

// TestEnvironmentsHealth: an environment that cannot run makes Health say
// which and why, with its code; the other still runs; all healthy is nil.
func TestEnvironmentsHealth(t *testing.T) {
	e, _, data := mustFakeEnvironments(t)
	if err := e.Health(context.Background()); err != nil {
		t.Fatalf("all healthy: %v", err)
	}
	data.health = sandboxd.Errorf(sandboxd.CodeUnavailable, "runtime.health", "image sandbox-python-data:3.11 is missing: run `make image`")
	err := e.Health(context.Background())
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable ||
		sandboxd.ErrorMessage(err) != "environment data: image sandbox-python-data:3.11 is missing: run `make image`" {
		t.Fatalf("data's image missing: %v (%q)", err, sandboxd.ErrorMessage(err))
	}
	each := e.healthEach(context.Background())
	if each["python"] != nil || each["data"] == nil || len(each) != 2 {
		t.Errorf("healthEach %v", each)
	}
	if res, err := e.Run(context.Background(), sandboxd.Job{ID: "p"}); err != nil || res.Stdout != "python" {
		t.Errorf("python while data is unhealthy: %+v %v", res, err)
	}
	if info, err := e.Info(context.Background()); err != nil || info.Image != "python-image" {
		t.Errorf("info %+v %v, want the default environment's", info, err)
	}
}

// TestEnvironmentsLifecycle: Reap removes the instance's leftovers once
// (every environment's) and then starts every pool; Close closes every
// runner; PoolStats sums the pools.
func TestEnvironmentsLifecycle(t *testing.T) {
	e, py, data := mustFakeEnvironments(t)
	if n, err := e.Reap(context.Background()); n != 3 || err != nil {
		t.Errorf("Reap = %d, %v", n, err)
	}
	if py.reaped != 1 || data.reaped != 0 || !py.pooled || !data.pooled {
		t.Errorf("reaped python %d data %d times; pools started python %v data %v", py.reaped, data.reaped, py.pooled, data.pooled)
	}
	if got := e.PoolStats(); got != (PoolStats{Target: 5, Idle: 4, Starting: 1, Hits: 12, Misses: 1, Started: 24, Retired: 4}) {
		t.Errorf("pool stats %+v", got)
	}
	if err := e.Close(context.Background()); err != nil || !py.closed || !data.closed {
		t.Errorf("Close: %v; closed python %v data %v", err, py.closed, data.closed)
	}
}

// TestEnvironmentsHealthBuilding: an environment whose image is being
// built leaves the service healthy (a *sandboxd.Building naming it) and
// Info lists the build; the default environment building, or another
// failure beside a build, is unhealthy as before.
func TestEnvironmentsHealthBuilding(t *testing.T) {
	e, py, data := mustFakeEnvironments(t)
	ready := time.Now().Add(2 * time.Minute)
	building := func(env string) error {
		return &sandboxd.Error{Code: sandboxd.CodeUnavailable, Op: "runtime.health", Message: "image x is being built",
			Err: &sandboxd.ImageBuild{Environment: env, Image: env + "-image", ReadyAt: ready}, RetryAfter: time.Minute}
	}
	data.health = building("data")
	err := e.Health(context.Background())
	var b *sandboxd.Building
	if !errors.As(err, &b) || len(b.Images()) != 1 || b.Images()[0].Environment != "data" || !b.Images()[0].ReadyAt.Equal(ready) {
		t.Fatalf("data building: %v", err)
	}
	if r := b.Refusal("data"); r == nil || r.RetryAfter != time.Minute || b.Refusal("python") != nil {
		t.Errorf("refusals %v, %v", r, b.Refusal("python"))
	}
	if info, err := e.Info(context.Background()); err != nil || len(info.Building) != 1 || info.Building[0].Image != "data-image" {
		t.Errorf("info while data builds: %+v %v", info, err)
	}
	py.health = sandboxd.Errorf(sandboxd.CodeUnavailable, "runtime.health", "Docker is unreachable")
	err = e.Health(context.Background())
	if errors.As(err, &b) || sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable ||
		!strings.Contains(sandboxd.ErrorMessage(err), "environment data: image x is being built") {
		t.Errorf("python down, data building: %v", err)
	}
	py.health, data.health = building("python"), nil
	if err := e.Health(context.Background()); errors.As(err, &b) || sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Errorf("the default environment building: %v", err)
	}
}

// TestEnvironmentsOpenSession: a session opens in the runner its
// environment names, "" in python's, in the language asked for; an
// unknown environment is CodeInvalid.
func TestEnvironmentsOpenSession(t *testing.T) {
	e, py, data := mustFakeEnvironments(t)
	for _, env := range []string{"", "python", "data"} {
		if _, err := e.OpenSession(context.Background(), env, sandboxd.LanguagePython); err != nil {
			t.Errorf("environment %q: %v", env, err)
		}
	}
	if _, err := e.OpenSession(context.Background(), "python", sandboxd.LanguageBash); err != nil {
		t.Errorf("bash in python: %v", err)
	}
	if py.opened != 3 || data.opened != 1 {
		t.Errorf("python opened %d, data %d; want 3 and 1", py.opened, data.opened)
	}
	if want := []string{"python", "python", "bash"}; !slices.Equal(py.languages, want) {
		t.Errorf("python's sessions in %v, want %v", py.languages, want)
	}
	_, err := e.OpenSession(context.Background(), "gpu", sandboxd.LanguagePython)
	if sandboxd.ErrorCode(err) != sandboxd.CodeInvalid || !strings.Contains(sandboxd.ErrorMessage(err), `unknown environment "gpu"`) {
		t.Errorf("unknown environment: %v", err)
	}
}
