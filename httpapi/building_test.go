package httpapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sandboxd"
)

// buildingRunner is a runner whose data environment's image is being
// built: its health is a *sandboxd.Building, its info lists the build,
// and its data runs are refused as the runtime refuses them.
type buildingRunner struct {
	fakeRunner
	readyAt time.Time
}

func (b *buildingRunner) refusal() *sandboxd.Error {
	return &sandboxd.Error{Code: sandboxd.CodeUnavailable, Op: "runtime.create",
		Message:    "image sandbox-python-data:3.11 is being built: it should be ready in about 120 s",
		Err:        &b.build()[0],
		RetryAfter: time.Until(b.readyAt)}
}

func (b *buildingRunner) build() []sandboxd.ImageBuild {
	return []sandboxd.ImageBuild{{Environment: "data", Image: "sandbox-python-data:3.11",
		Started: b.readyAt.Add(-5 * time.Minute), ReadyAt: b.readyAt}}
}

func (b *buildingRunner) Health(context.Context) error {
	return &sandboxd.Building{Refusals: []*sandboxd.Error{b.refusal()}}
}

func (b *buildingRunner) Info(ctx context.Context) (sandboxd.RunnerInfo, error) {
	info, err := b.fakeRunner.Info(ctx)
	info.Building = b.build()
	return info, err
}

func (b *buildingRunner) Run(ctx context.Context, job sandboxd.Job) (sandboxd.Result, error) {
	if job.Environment == "data" {
		return sandboxd.Result{}, b.refusal()
	}
	return b.fakeRunner.Run(ctx, job)
}

// newBuildingServer is a server over a buildingRunner, with python and
// data configured.
func newBuildingServer() (*Server, *buildingRunner, *fakeGate) {
	runner := &buildingRunner{fakeRunner: fakeRunner{result: sandboxd.Result{Stdout: "42\n", Status: sandboxd.StatusOK}},
		readyAt: time.Now().Add(2 * time.Minute)}
	gate := &fakeGate{}
	s := newTestServer(&runner.fakeRunner, gate)
	s.Runner = runner
	s.Environments = []sandboxd.Environment{{Name: "python", Languages: []string{sandboxd.LanguagePython}}, {Name: "data", Languages: []string{sandboxd.LanguagePython}}}
	return s, runner, gate
}

// TestHealthWhileDataBuilds: health stays 200 and says data is building,
// with its image and when it will be ready; version says it too.
func TestHealthWhileDataBuilds(t *testing.T) {
	s, runner, _ := newBuildingServer()
	h := s.Handler()
	rec := do(t, h, "GET", "/v1/health", "")
	var health healthResponse
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &health) != nil {
		t.Fatalf("health %d: %s", rec.Code, rec.Body)
	}
	b := health.Building["data"]
	if health.Status != "ok" || health.Environments["python"] != "ready" || health.Environments["data"] != "building" ||
		b.Image != "sandbox-python-data:3.11" || !b.ReadyAt.Equal(runner.readyAt) ||
		b.ReadyInSeconds < 100 || b.ReadyInSeconds > 121 {
		t.Errorf("health while data builds: %s", rec.Body)
	}
	rec = do(t, h, "GET", "/v1/version", "")
	var version versionResponse
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &version) != nil || version.Building["data"].Image != "sandbox-python-data:3.11" {
		t.Errorf("version while data builds %d: %s", rec.Code, rec.Body)
	}
	if !strings.Contains(rec.Body.String(), `"ready_in_seconds"`) {
		t.Errorf("version has no estimate: %s", rec.Body)
	}
}

// TestDataRunWhileBuilding: a data run while its image builds answers 503
// with Retry-After and a message saying it is being built, before the
// payment gate is asked anything (nothing to pay, nothing reserved); a
// python run is answered.
func TestDataRunWhileBuilding(t *testing.T) {
	s, runner, gate := newBuildingServer()
	h := s.Handler()
	rec := do(t, h, "POST", "/v1/code", `{"code":"import numpy","environment":"data"}`)
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "is being built") {
		t.Fatalf("data run %d: %s", rec.Code, rec.Body)
	}
	if ra := rec.Header().Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After %q", ra)
	}
	if gate.count(&gate.checked) != 0 || gate.count(&gate.reserved) != 0 || runner.ran() != 0 {
		t.Errorf("gate checked %d, reserved %d, ran %d: want nothing before the refusal",
			gate.count(&gate.checked), gate.count(&gate.reserved), runner.ran())
	}
	rec = do(t, h, "POST", "/v1/code", `{"code":"print(6*7)"}`)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"stdout":"42\n"`) {
		t.Errorf("python run while data builds %d: %s", rec.Code, rec.Body)
	}
}

// TestMCPDataRunWhileBuilding: over MCP the same refusal is a tool error
// with the retry delay.
func TestMCPDataRunWhileBuilding(t *testing.T) {
	s, _, gate := newBuildingServer()
	res := callTool(t, mustMCP(t, s), map[string]any{"code": "import numpy", "environment": "data"}, nil)
	msg := text(t, res)
	if !res.IsError || !strings.Contains(msg, "is being built") || !strings.Contains(msg, "retry the call in") {
		t.Errorf("MCP data run while building: error %v, %q", res.IsError, msg)
	}
	if gate.count(&gate.checked) != 0 {
		t.Errorf("the gate was asked %d times", gate.count(&gate.checked))
	}
}
