package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sandboxd/internal/servicetest"
)

// proc is a child process a test started: anvil or the facilitator (sandboxd is
// started by servicetest). Its output
// is kept for failure messages; it is stopped when the test ends, on every path.
type proc struct {
	name   string
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	exited chan struct{}
	lines  chan string
}

// startProc starts name with its own process group and a death signal, so that even a
// killed test run leaves nothing behind. Each stdout and stderr line is kept and sent
// on lines (dropped when nobody reads).
func startProc(t testing.TB, name string, env []string, stdin *os.File, argv ...string) *proc {
	t.Helper()
	p := &proc{name: name, exited: make(chan struct{}), lines: make(chan string, 64)}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		p.cmd.Stdin = stdin
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.cmd.Stdout
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.stop)
	return p
}

// stop asks the process group to end (SIGTERM), then kills it after a grace period.
func (p *proc) stop() {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
		}
	}
}

// output is everything the process printed so far.
func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitLine waits for a line matching re and returns its first submatch.
func (p *proc) waitLine(t testing.TB, re *regexp.Regexp, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line := <-p.lines:
			if m := re.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		case <-p.exited:
			t.Fatalf("%s exited early:\n%s", p.name, p.output())
		case <-deadline:
			t.Fatalf("%s printed no line matching %s within %s:\n%s", p.name, re, timeout, p.output())
		}
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// anvilPath is the anvil binary shipped in the npm package's platform package.
func anvilPath() string {
	arch := map[string]string{"amd64": "amd64", "arm64": "arm64"}[goruntime.GOARCH]
	return filepath.Join(interopDir, "node_modules", "@foundry-rs", "anvil-linux-"+arch, "bin", "anvil")
}

// startAnvil starts a silent anvil chain with Base Sepolia's chain id on a free loopback
// port and waits until it answers JSON-RPC.
func startAnvil(t testing.TB) *chain {
	t.Helper()
	var p *proc
	var c *chain
	// A port taken between freePort and anvil's bind makes anvil exit: try another.
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		p = startProc(t, "anvil", nil, nil, anvilPath(), "--chain-id", "84532", "--host", "127.0.0.1",
			"--port", fmt.Sprint(port), "--silent")
		c = &chain{rpc: fmt.Sprintf("http://127.0.0.1:%d", port)}
		if c.waitUp(10*time.Second, p.exited) == nil {
			return c
		}
		p.stop()
	}
	t.Fatalf("anvil did not answer:\n%s", p.output())
	return nil
}

// writeKey writes a hex private key to a 0600 file in the test's temporary directory.
func writeKey(t testing.TB, name, hexKey string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(hexKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runNode runs one of the interop scripts and decodes the JSON line it prints into out.
func runNode(t testing.TB, timeout time.Duration, out any, script string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(interopDir, script)}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	last := lines[len(lines)-1]
	if err != nil {
		t.Fatalf("node %s %s: %v\nstdout: %s\nstderr: %s", script, strings.Join(args, " "), err, stdout, stderr.String())
	}
	if err := json.Unmarshal([]byte(last), out); err != nil {
		t.Fatalf("node %s printed no JSON (%v): %s\nstderr: %s", script, err, stdout, stderr.String())
	}
}

// startFacilitator serves the official facilitator (test/interop/facilitator.mjs) with the key
// in keyFile, settling on c, with flags passed on (--channels ...); it returns its base URL.
func startFacilitator(t testing.TB, c *chain, keyFile string, flags ...string) string {
	t.Helper()
	// The facilitator exits when this pipe's write end closes: when the test process dies
	// if nothing else stops it. An *os.File is handed to the child as is; an io.Reader
	// would make Wait wait for a copy that never ends.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	argv := append([]string{"node", filepath.Join(interopDir, "facilitator.mjs"),
		"--rpc", c.rpc, "--key-file", keyFile, "--watch-stdin"}, flags...)
	p := startProc(t, "facilitator", nil, r, argv...)
	r.Close()
	return p.waitLine(t, regexp.MustCompile(`"url":"([^"]+)"`), 20*time.Second)
}

// service is a sandboxd process started by a test.
type service struct {
	*servicetest.Service
}

// startService starts the sandboxd binary with env overrides and its own ledger file,
// waits until it listens and, when healthy is set, until /v1/health answers 200. It is
// stopped when the test ends, and the test fails when a container of its instance is
// left; a test that fails gets the service's log.
func startService(t testing.TB, instance string, healthy bool, env ...string) *service {
	t.Helper()
	env = append([]string{"SANDBOX_PAYMENTS_LEDGER=" + filepath.Join(t.TempDir(), "ledger.db")}, env...)
	sv := servicetest.Start(t, servicetest.Options{Binary: binary, Instance: instance, Env: env})
	s := &service{sv}
	if healthy {
		s.waitHealthy(t, 60*time.Second)
	}
	return s
}

// stop stops the service as an operator does (SIGTERM, then SIGKILL after a bound).
func (s *service) stop() { _ = s.Stop(servicetest.StopWithin) }

// waitHealthy polls GET /v1/health until it answers 200.
func (s *service) waitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		res, err := httpClient.Get(s.URL + "/v1/health")
		if err == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("%d %s", res.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("sandboxd %s not healthy within %s (last: %s); is Docker running (scripts/docker-up.sh) and the image built (make image)?\n%s",
		s.Instance, timeout, last, s.Log())
}

// httpClient bounds every request the Go side makes itself.
var httpClient = &http.Client{Timeout: 30 * time.Second}
