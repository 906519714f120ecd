package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// sessionAnswer is what the sessions phase reads of a call's answer, in a
// session (result set) or one-shot.
type sessionAnswer struct {
	Status string  `json:"status"`
	Stdout string  `json:"stdout"`
	Stderr string  `json:"stderr"`
	Result *string `json:"result"`
	Files  []struct {
		Name    string `json:"name"`
		Content []byte `json:"content"`
	} `json:"files"`
	SessionEnded bool `json:"session_ended"`
}

// fileIn is a file of a request body; its content goes out as base64.
type fileIn struct {
	Name    string `json:"name"`
	Content []byte `json:"content"`
}

// send sends body as JSON with method to the service's path and returns
// the status, the body read and the wall time to its last byte.
func (s *service) send(method, path string, body any) (int, []byte, time.Duration, error) {
	var in io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, nil, 0, err
		}
		in = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.URL+path, in)
	if err != nil {
		return 0, nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, raw, time.Since(start), err
}

// openSession opens a session in env and returns its id and the open's
// wall time.
func (s *service) openSession(env string) (string, time.Duration, error) {
	status, raw, d, err := s.send(http.MethodPost, "/v1/sessions", map[string]string{"environment": env})
	if err != nil {
		return "", 0, err
	}
	var o struct {
		SessionID string `json:"session_id"`
	}
	if status != http.StatusCreated || json.Unmarshal(raw, &o) != nil || o.SessionID == "" {
		return "", 0, fmt.Errorf("open: status %d: %.200s", status, raw)
	}
	return o.SessionID, d, nil
}

// closeSession ends session id.
func (s *service) closeSession(id string) {
	_, _, _, _ = s.send(http.MethodDelete, "/v1/sessions/"+id, nil)
}

// callAt posts body to path (a session's code or /v1/code) and decodes a
// delivered answer whose status is ok.
func (s *service) callAt(path string, body any) (sessionAnswer, time.Duration, error) {
	status, raw, d, err := s.send(http.MethodPost, path, body)
	if err != nil {
		return sessionAnswer{}, 0, err
	}
	var a sessionAnswer
	if status != http.StatusOK || json.Unmarshal(raw, &a) != nil {
		return sessionAnswer{}, 0, fmt.Errorf("status %d: %.200s", status, bytes.TrimSpace(raw))
	}
	if a.Status != "ok" || a.SessionEnded {
		return a, 0, fmt.Errorf("run %s (session ended %v): %.300s", a.Status, a.SessionEnded, a.Stderr)
	}
	return a, d, nil
}

// sessionPath is the path of session id's calls.
func sessionPath(id string) string { return "/v1/sessions/" + id + "/code" }

// stepper makes the calls of `x += 1; x` in one session and checks that
// each answers the next integer.
type stepper struct {
	s  *service
	id string
	n  int
}

// newStepper opens a python session and sets x to 0 in it.
func newStepper(s *service) (*stepper, error) {
	id, _, err := s.openSession("python")
	if err != nil {
		return nil, err
	}
	if _, _, err := s.callAt(sessionPath(id), map[string]string{"code": "x = 0"}); err != nil {
		s.closeSession(id)
		return nil, err
	}
	return &stepper{s: s, id: id}, nil
}

// step makes one call and returns its wall time.
func (st *stepper) step() (time.Duration, error) {
	a, d, err := st.s.callAt(sessionPath(st.id), map[string]string{"code": sessionStep})
	if err != nil {
		return 0, err
	}
	st.n++
	if a.Result == nil || *a.Result != strconv.Itoa(st.n) {
		return 0, fmt.Errorf("result %v, want %d", a.Result, st.n)
	}
	return d, nil
}

// poolFull says whether the service's warm pools hold as many idle
// containers as their target, from its metrics.
func (s *service) poolFull() bool {
	g, err := s.poolGauges()
	return err == nil && g["target"] > 0 && g["idle"] >= g["target"]
}

// poolGauges reads the warm pool's gauges from the service's metrics:
// "idle", "starting" and "target" containers.
func (s *service) poolGauges() (map[string]float64, error) {
	g := map[string]float64{}
	resp, err := s.client.Get(s.MetricsURL() + "/metrics")
	if err != nil {
		return nil, err
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	names := map[string]string{"idle": "sandboxd_pool_idle_containers ", "starting": "sandboxd_pool_starting_containers ",
		"target": "sandboxd_pool_target_containers "}
	for _, line := range strings.Split(string(raw), "\n") {
		for key, name := range names {
			if v, ok := strings.CutPrefix(line, name); ok {
				g[key], _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			}
		}
	}
	if len(g) < len(names) {
		return nil, fmt.Errorf("the service's metrics lack a pool gauge (found %v)", g)
	}
	return g, nil
}
