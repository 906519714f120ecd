package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"sandboxd/internal/pgtest"
	"sandboxd/internal/testenv"
)

// binary is the sandboxd binary built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	code := func() int {
		defer pgtest.StopShared()
		if !integrationWanted() {
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "sandboxd-e2e")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		binary = filepath.Join(dir, "sandboxd")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building sandboxd: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// integrationWanted reports whether tests that need Docker must run (and
// fail when Docker is missing) rather than skip.
func integrationWanted() bool {
	return os.Getenv("CI") == "true" || os.Getenv("SANDBOXD_INTEGRATION") == "1"
}

// mustIntegration skips the test outside integration runs.
func mustIntegration(t *testing.T) {
	t.Helper()
	if !integrationWanted() {
		t.Skip("set SANDBOXD_INTEGRATION=1 (make test does) to run end-to-end tests against Docker")
	}
}

// service is a sandboxd process started by a test.
type service struct {
	cmd      *exec.Cmd
	url      string
	instance string
	// metricsURL is the base URL of its metrics listener.
	metricsURL string
	mu         sync.Mutex
	log        bytes.Buffer
	exited     chan error
}

var (
	listenLine  = regexp.MustCompile(`msg=listening addr=(\S+)`)
	metricsLine = regexp.MustCompile(`msg="metrics listening" addr=(\S+)`)
)

// startService starts sandboxd with the environment overrides and waits
// until it listens. It is killed when the test ends.
func startService(t *testing.T, instance string, env ...string) *service {
	t.Helper()
	s := &service{instance: instance, exited: make(chan error, 1)}
	s.cmd = exec.Command(binary, "serve", "--config", "../../config.yaml")
	s.cmd.Env = append(os.Environ(), "SANDBOX_SERVER_ADDR=127.0.0.1:0", "SANDBOX_RUNTIME_INSTANCE="+instance,
		"SANDBOX_SERVER_METRICS_ADDR=127.0.0.1:0")
	s.cmd.Env = append(s.cmd.Env, testenv.ServiceEnv()...)
	s.cmd.Env = append(s.cmd.Env, env...)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			if m := metricsLine.FindStringSubmatch(line); m != nil {
				s.mu.Lock()
				s.metricsURL = "http://" + m[1]
				s.mu.Unlock()
			}
			if m := listenLine.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
		s.exited <- s.cmd.Wait()
	}()
	t.Cleanup(func() { _ = s.cmd.Process.Kill() })
	select {
	case a := <-addr:
		s.url = "http://" + a
	case err := <-s.exited:
		t.Fatalf("sandboxd exited at start: %v\n%s", err, s.logs())
	case <-time.After(30 * time.Second):
		t.Fatalf("sandboxd did not listen within 30 s\n%s", s.logs())
	}
	return s
}

func (s *service) logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// waitExit waits for the process to end and returns its exit code.
func (s *service) waitExit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-s.exited:
		return s.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("sandboxd still running %v after the signal\n%s", within, s.logs())
		return -1
	}
}

// answer is the JSON of POST /v1/code.
type answer struct {
	Lang      string `json:"lang"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	ExitCode  int    `json:"exit_code"`
	Status    string `json:"status"`
	TimedOut  bool   `json:"timed_out"`
	Truncated bool   `json:"truncated"`
	CPUMS     *int64 `json:"cpu_ms"`
	MaxRSSKB  *int64 `json:"max_rss_kb"`
	Error     string `json:"error"`
}

// post sends code and decodes the answer.
func (s *service) post(t *testing.T, code string) (int, answer, http.Header) {
	t.Helper()
	status, a, h, err := s.send(code)
	if err != nil {
		t.Fatal(err)
	}
	return status, a, h
}

// postAsync sends code from another goroutine; the answer (or an error
// in its Error field) arrives on the channel.
func (s *service) postAsync(code string) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		_, a, _, err := s.send(code)
		if err != nil {
			a.Error = err.Error()
		}
		ch <- a
	}()
	return ch
}

func (s *service) send(code string) (int, answer, http.Header, error) {
	return s.sendBody(map[string]string{"language": "python", "code": code})
}

// sendBody posts fields as the JSON body of POST /v1/code.
func (s *service) sendBody(fields map[string]string) (int, answer, http.Header, error) {
	body, _ := json.Marshal(fields)
	resp, err := http.Post(s.url+"/v1/code", "", bytes.NewReader(body))
	if err != nil {
		return 0, answer{}, nil, fmt.Errorf("POST /v1/code: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return resp.StatusCode, a, resp.Header, fmt.Errorf("answer is not JSON (%d): %q", resp.StatusCode, raw)
	}
	return resp.StatusCode, a, resp.Header, nil
}

// containers lists the containers labelled with the instance.
func containers(t *testing.T, instance string) []string {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", "io.sandboxd.instance="+instance))})
	if err != nil {
		t.Fatalf("listing containers: %v", err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID[:12]+" "+c.State)
	}
	return ids
}

// waitFor polls cond every 50 ms until it holds or the time is up.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// noPool turns the warm pool off, for tests that count containers to see a
// run in flight: with a pool, containers exist before any run.
const noPool = "SANDBOX_RUNTIME_POOL_SIZE=0"

// uniqueInstance names an instance for one test, so tests never reap each
// other's containers.
func uniqueInstance(t *testing.T) string {
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	return fmt.Sprintf("e2e-%d-%s", os.Getpid(), strings.ToLower(name))
}
