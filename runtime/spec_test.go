package runtime

import (
	"context"
	"reflect"
	"regexp"
	"sandboxd/internal/configcheck"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"sandboxd"
)

// testSpec is the spec the hardening tests inspect.
func testSpec() spec {
	cfg := testConfig()
	cfg.OCIRuntime = "runsc"
	return newSpec(cfg, sandboxd.Job{ID: "job-1", Code: "print(1)"})
}

// equal reports a field that differs from what it must be.
func equal(t *testing.T, field string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", field, got, want)
	}
}

func TestSpecContainerConfig(t *testing.T) {
	sp := testSpec()
	c, eq := sp.config, func(f string, got, want any) { t.Helper(); equal(t, f, got, want) }
	if !regexp.MustCompile(`^sandboxd-[0-9a-f]{12}$`).MatchString(sp.name) {
		t.Errorf("name = %q, want sandboxd-<12 hex>", sp.name)
	}
	if other := testSpec(); other.name == sp.name {
		t.Errorf("two specs share the name %q", sp.name)
	}
	eq("Image", c.Image, testImage)
	eq("User", c.User, "10001:10001")
	eq("Labels", c.Labels, map[string]string{
		"io.sandboxd.managed": "true", "io.sandboxd.instance": testInstance, "io.sandboxd.job": "job-1",
	})
	eq("stdin and attach flags", []bool{c.OpenStdin, c.StdinOnce, c.AttachStdin, c.AttachStdout, c.AttachStderr, c.Tty},
		[]bool{true, true, true, true, true, false})
	eq("NetworkDisabled", c.NetworkDisabled, true)
	// The data limit for the runner to set: 96 MiB of 128.
	eq("Env", c.Env, []string{"SANDBOX_DATA_LIMIT=100663296"})
	eq("Cmd", len(c.Cmd), 0) // the image's runner, nothing else
	eq("Entrypoint", len(c.Entrypoint), 0)
}

func TestSpecHostConfig(t *testing.T) {
	h, eq := testSpec().host, func(f string, got, want any) { t.Helper(); equal(t, f, got, want) }
	eq("NetworkMode", h.NetworkMode, container.NetworkMode("none"))
	eq("ReadonlyRootfs", h.ReadonlyRootfs, true)
	eq("Tmpfs", h.Tmpfs, map[string]string{"/tmp": "rw,noexec,nosuid,nodev,mode=1777,size=16777216"})
	eq("CapDrop", []string(h.CapDrop), []string{"ALL"})
	eq("CapAdd", len(h.CapAdd), 0)
	eq("SecurityOpt", h.SecurityOpt, []string{"no-new-privileges"})
	eq("Privileged", h.Privileged, false)
	eq("IpcMode", h.IpcMode, container.IPCModePrivate)
	eq("ShmSize", h.ShmSize, int64(16<<20))
	eq("LogConfig", h.LogConfig, container.LogConfig{Type: "none"})
	eq("AutoRemove", h.AutoRemove, false)
	eq("Runtime", h.Runtime, "runsc")
	eq("Binds", len(h.Binds), 0)
	eq("Mounts", len(h.Mounts), 0)
	eq("VolumesFrom", len(h.VolumesFrom), 0)
	eq("Devices", len(h.Devices), 0)
	eq("PidMode", h.PidMode, container.PidMode(""))
	eq("UsernsMode", h.UsernsMode, container.UsernsMode(""))

	r := h.Resources
	eq("Memory", r.Memory, int64(128<<20))
	eq("MemorySwap", r.MemorySwap, int64(128<<20))
	eq("NanoCPUs", r.NanoCPUs, int64(1e9))
	if r.PidsLimit == nil || *r.PidsLimit != 64+gvisorPids {
		t.Errorf("PidsLimit = %v, want 64 and gVisor's own %d", r.PidsLimit, gvisorPids)
	}
	eq("Ulimits", r.Ulimits, []*container.Ulimit{
		{Name: "nofile", Soft: 256, Hard: 256},
		{Name: "fsize", Soft: 16 << 20, Hard: 16 << 20},
		{Name: "core", Soft: 0, Hard: 0},
	})
	for _, u := range r.Ulimits {
		if u.Name == "nproc" {
			t.Errorf("nproc ulimit set: it is per uid across the host")
		}
	}
}

// TestSpecDaemonDefaultRuntime: no OCI runtime configured is the daemon's
// default, whose pids limit is the configured one, with nothing added for
// gVisor.
func TestSpecDaemonDefaultRuntime(t *testing.T) {
	sp := newSpec(testConfig(), sandboxd.Job{ID: "j"})
	if sp.host.Runtime != "" {
		t.Errorf("Runtime = %q, want empty (the daemon's default)", sp.host.Runtime)
	}
	if p := sp.host.Resources.PidsLimit; p == nil || *p != 64 {
		t.Errorf("PidsLimit = %v, want the configured 64", p)
	}
}

func TestInstanceFilter(t *testing.T) {
	f := instanceFilter("svc-a")
	got := f.Get("label")
	want := []string{"io.sandboxd.instance=svc-a", "io.sandboxd.managed=true"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("label filters = %v, want %v", got, want)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mod    func(*Config)
		errHas string
	}{
		{"valid", func(*Config) {}, ""},
		{"no image", func(c *Config) { c.Image = "" }, "Image"},
		{"no timeout", func(c *Config) { c.Timeout = 0 }, "Timeout"},
		{"tiny memory", func(c *Config) { c.MemoryBytes = 1 << 20 }, "MemoryBytes"},
		{"no cpus", func(c *Config) { c.NanoCPUs = 0 }, "NanoCPUs"},
		{"no pids", func(c *Config) { c.PidsLimit = 0 }, "PidsLimit"},
		{"no tmpfs", func(c *Config) { c.TmpfsBytes = -1 }, "TmpfsBytes"},
		{"no output cap", func(c *Config) { c.MaxOutputBytes = 0 }, "MaxOutputBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.mod(&cfg)
			_, err := New(cfg, nil)
			switch {
			case tt.errHas == "" && err != nil:
				t.Errorf("New: %v", err)
			case tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)):
				t.Errorf("New: err = %v, want one naming %s", err, tt.errHas)
			}
		})
	}
}

func TestNewDefaultInstance(t *testing.T) {
	cfg := testConfig()
	cfg.Instance = ""
	d, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.cfg.Instance != "default" {
		t.Errorf("Instance = %q, want default", d.cfg.Instance)
	}
}

func TestInflightRefusesAfterClose(t *testing.T) {
	var in inflight
	in.runs = map[*liveRun]struct{}{}
	ctx, f, end, err := in.begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.setContainer("abc")
	flights := in.close()
	if len(flights) != 1 || flights[0].containerID() != "abc" {
		t.Fatalf("close returned %v, want the one live run", flights)
	}
	flights[0].cancel(errClosing)
	if err := ctxError(ctx, "runtime.run"); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Errorf("a run cancelled by Close: %v, want CodeUnavailable", err)
	}
	if _, _, _, err := in.begin(context.Background()); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Errorf("begin after close: err = %v, want CodeUnavailable", err)
	}
	waitCtx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := in.wait(waitCtx); err == nil {
		t.Errorf("wait returned before the run ended")
	}
	end()
	if err := in.wait(context.Background()); err != nil {
		t.Errorf("wait after the run ended: %v", err)
	}
}

func TestDataLimitLeavesHeadroom(t *testing.T) {
	for _, c := range []struct{ memory, want int64 }{
		{16 * configcheck.MiB, 12 * configcheck.MiB},   // a quarter of a small limit
		{128 * configcheck.MiB, 96 * configcheck.MiB},  // the default: 32 MiB below
		{512 * configcheck.MiB, 384 * configcheck.MiB}, // the data environment: 128 MiB below, room for its libraries and their page cache
		{1 * configcheck.GiB, 896 * configcheck.MiB},   // never more than dataHeadroom below
		{64 * configcheck.GiB, 64*configcheck.GiB - 128*configcheck.MiB},
	} {
		if got := dataLimit(c.memory); got != c.want {
			t.Errorf("dataLimit(%d MiB) = %d MiB, want %d MiB", c.memory/configcheck.MiB, got/configcheck.MiB, c.want/configcheck.MiB)
		}
	}
}
