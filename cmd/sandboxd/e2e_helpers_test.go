package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"sandboxd/internal/pgtest"
	"sandboxd/internal/servicetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	servicetest.RemoveBinary()
	os.Exit(code)
}

// service is a sandboxd process started by a test, with the calls the
// end-to-end tests make.
type service struct {
	*servicetest.Service
}

// answer is the JSON of POST /v1/code.
type answer = servicetest.Answer

// startService starts sandboxd with the environment overrides and waits
// until it listens. It is stopped when the test ends, and the test fails
// when a container of its instance is left.
func startService(t *testing.T, instance string, env ...string) *service {
	t.Helper()
	return &service{servicetest.Start(t, servicetest.Options{Instance: instance, Env: env})}
}

// waitExit waits for the process to end and returns its exit code.
func (s *service) waitExit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-s.Exited():
		return s.ExitCode()
	case <-time.After(within):
		t.Fatalf("sandboxd still running %v after the signal\n%s", within, s.Log())
		return -1
	}
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

// sendBody posts fields (a map or a struct) as the JSON body of POST /v1/code.
func (s *service) sendBody(fields any) (int, answer, http.Header, error) {
	body, _ := json.Marshal(fields)
	resp, err := http.Post(s.URL+"/v1/code", "", bytes.NewReader(body))
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
// run in flight: with a pool, containers exist before any run. noData and
// noNode turn the data and node environments off, whose warm pools would
// hold one and two.
const (
	noPool = "SANDBOX_RUNTIME_POOL_SIZE=0"
	noData = "SANDBOX_ENVIRONMENTS_DATA_ENABLED=false"
	noNode = "SANDBOX_ENVIRONMENTS_NODE_ENABLED=false"
)

// uniqueInstance names an instance for one test, so tests never reap each
// other's containers.
func uniqueInstance(t *testing.T) string {
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	return fmt.Sprintf("e2e-%d-%s", os.Getpid(), strings.ToLower(name))
}
