package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// payStep is one call of test/interop/batch.mjs: a POST of body to url,
// where "${NAME}" stands for the session opened by an earlier step whose
// as is NAME.
type payStep struct {
	URL  string         `json:"url"`
	Body map[string]any `json:"body"`
	As   string         `json:"as,omitempty"`
	// kind names the row the step counts in; "" counts in none (a warm-up).
	kind string
}

// payResult is one step's outcome as batch.mjs prints it: the answer, the
// PAYMENT-RESPONSE the official client decoded, the answer's
// Server-Timing, and the wall time of the client's whole exchange.
type payResult struct {
	Status int `json:"status"`
	Body   struct {
		Status    string `json:"status"`
		Stdout    string `json:"stdout"`
		SessionID string `json:"session_id"`
		Error     string `json:"error"`
	} `json:"body"`
	Error  string  `json:"error"`
	Timing string  `json:"timing"`
	MS     float64 `json:"ms"`
	// RequestMS is each HTTP request's time to its answer's headers: the
	// 402 and the paid call, or the one free call.
	RequestMS  []float64 `json:"requestMs"`
	Settlement *struct {
		Success     bool   `json:"success"`
		Transaction string `json:"transaction"`
		ErrorReason string `json:"errorReason"`
		Extra       struct {
			ChargedAmount string `json:"chargedAmount"`
			ChannelState  struct {
				ChannelID string `json:"channelId"`
			} `json:"channelState"`
		} `json:"extra"`
	} `json:"settlement"`
}

// wall is the step's time at the caller.
func (r payResult) wall() time.Duration { return time.Duration(r.MS * float64(time.Millisecond)) }

// tx is the transaction the payment settled in ("" for a voucher).
func (r payResult) tx() string {
	if r.Settlement == nil {
		return ""
	}
	return r.Settlement.Transaction
}

// check says what is wrong with a step's answer: a run must answer ok
// with "1\n", an open 201 with a session id; a paid step must carry a
// successful settlement of price (paid: "exact", "deposit" or "voucher"),
// in a transaction unless it is a voucher's, which touches no chain.
func (r payResult) check(open bool, paid string, price int64) error {
	switch {
	case r.Error != "":
		return fmt.Errorf("client: %s", r.Error)
	case open && (r.Status != 201 || r.Body.SessionID == ""):
		return fmt.Errorf("open: status %d %s", r.Status, r.Body.Error)
	case !open && (r.Status != 200 || r.Body.Status != "ok" || r.Body.Stdout != "1\n"):
		return fmt.Errorf("run: status %d, %s %q %s", r.Status, r.Body.Status, r.Body.Stdout, r.Body.Error)
	case paid == "":
		return nil
	case r.Settlement == nil || !r.Settlement.Success:
		return fmt.Errorf("no successful PAYMENT-RESPONSE: %+v", r.Settlement)
	case paid != "exact" && r.Settlement.Extra.ChargedAmount != strconv.FormatInt(price, 10):
		return fmt.Errorf("%s charged %q, want %d", paid, r.Settlement.Extra.ChargedAmount, price)
	case (paid == "voucher") != (r.tx() == ""):
		return fmt.Errorf("%s payment with transaction %q", paid, r.tx())
	}
	return nil
}

// payRun runs steps in order, gap before each, through the official x402
// client in test/interop/batch.mjs, paying with keyFile in scheme
// ("batch-settlement" or "exact"), and returns each step's outcome.
func payRun(ctx context.Context, rpc, keyFile, scheme string, gap time.Duration, steps []payStep) ([]payResult, error) {
	raw, err := json.Marshal(steps)
	if err != nil {
		return nil, err
	}
	var out struct {
		OK      bool        `json:"ok"`
		Results []payResult `json:"results"`
	}
	err = runNode(ctx, 4*time.Minute, &out, "batch.mjs", "--rpc", rpc, "--key-file", keyFile, "--steps", string(raw),
		"--scheme", scheme, "--gap", strconv.FormatInt(gap.Milliseconds(), 10))
	if err != nil {
		return nil, err
	}
	if !out.OK || len(out.Results) != len(steps) {
		return nil, fmt.Errorf("batch.mjs: %d results for %d steps", len(out.Results), len(steps))
	}
	return out.Results, nil
}

// runNode runs a script of test/interop with node and decodes the JSON
// line it prints last into out.
func runNode(ctx context.Context, timeout time.Duration, out any, script string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(interopDir(), script)}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("node %s: %w: %s", script, err, strings.TrimSpace(stderr.String()))
	}
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), out); err != nil {
		return fmt.Errorf("node %s printed no JSON (%w): %.300s", script, err, stdout)
	}
	return nil
}

// runStep is a step that runs `print(1)` one-shot at base, counted in kind.
func runStep(base, kind string) payStep {
	return payStep{URL: base + "/v1/code", Body: map[string]any{"language": "python", "code": channelProgram}, kind: kind}
}

// openStep is a step that opens a python session at base, kept as name.
func openStep(base, name string) payStep {
	return payStep{URL: base + "/v1/sessions", Body: map[string]any{"environment": "python"}, As: name}
}

// sessionRunStep is a step that runs `print(1)` in the session kept as name
// at base, counted in kind.
func sessionRunStep(base, name, kind string) payStep {
	return payStep{URL: base + "/v1/sessions/${" + name + "}/code", Body: map[string]any{"code": channelProgram}, kind: kind}
}
