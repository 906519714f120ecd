package runtime

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"sandboxd"
)

// helloWorld is the program both benchmarks run.
const helloWorld = `print("hello, world")`

// BenchmarkRunHelloWorld measures a run in a container made for it: create,
// attach, wait, start, hand-over, output up to the end marker (the removal
// follows in the background).
func BenchmarkRunHelloWorld(b *testing.B) {
	d := mustDocker(b)
	ctx := context.Background()
	for b.Loop() {
		res, err := d.Run(ctx, sandboxd.Job{ID: "bench", Code: helloWorld})
		if err != nil || res.Stdout != "hello, world\n" {
			b.Fatalf("Run = %+v, %v", res, err)
		}
	}
}

// BenchmarkRunHelloWorldPooled measures a run in a warm container: take,
// hand-over, output up to the end marker. The pool refills between runs,
// off the clock: back to back, runs would measure the engine's pace instead.
func BenchmarkRunHelloWorldPooled(b *testing.B) {
	d := mustDocker(b, pooled(2))
	d.pool.start()
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		settle(b, d)
		b.StartTimer()
		res, err := d.Run(ctx, sandboxd.Job{ID: "bench", Code: helloWorld})
		if err != nil || res.Stdout != "hello, world\n" {
			b.Fatalf("Run = %+v, %v", res, err)
		}
	}
	if st := d.pool.stats(); st.misses > 0 {
		b.Errorf("%d runs were not served by the pool", st.misses)
	}
}

// BenchmarkDockerRunBaseline measures `docker run --rm -i` of the same
// program with the same limits: the baseline BenchmarkRunHelloWorld is read
// against.
func BenchmarkDockerRunBaseline(b *testing.B) {
	mustDocker(b)
	if _, err := exec.LookPath("docker"); err != nil {
		b.Skip("no docker CLI")
	}
	args := []string{"run", "--rm", "-i", "--network", "none", "--read-only",
		"--tmpfs", "/tmp:rw,noexec,nosuid,nodev,mode=1777,size=16777216",
		"--memory", "128m", "--memory-swap", "128m", "--cpus", "1", "--pids-limit", "64",
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", sandboxUser,
		"--ulimit", "nofile=256", "--ulimit", "fsize=16777216", "--log-driver", "none",
		"--label", LabelManaged + "=true", "--label", LabelInstance + "=" + testInstance + "-bench",
		testImage}
	for b.Loop() {
		cmd := exec.Command("docker", args...)
		cmd.Stdin = strings.NewReader(helloWorld)
		out, err := cmd.Output()
		if err != nil || string(out) != "hello, world\n" {
			b.Fatalf("docker run = %q, %v", out, err)
		}
	}
}
