package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"sandboxd"
)

func TestTranspile(t *testing.T) {
	js := sandboxd.Job{Language: sandboxd.LanguageJavaScript, Code: "let x: number = 1"}
	if got, res := transpile(js, 100); res != nil || got.Code != js.Code {
		t.Errorf("a javascript job was changed: %q %+v", got.Code, res)
	}
	ts := sandboxd.Job{Language: sandboxd.LanguageTypeScript, Code: "const x: number = 1\nconsole.log(x)\n"}
	got, res := transpile(ts, 100)
	if res != nil || strings.Contains(got.Code, ": number") ||
		!strings.Contains(got.Code, "//# sourceMappingURL=data:application/json;base64,") {
		t.Errorf("transpiled %q, %+v", got.Code, res)
	}
	bad := sandboxd.Job{Language: sandboxd.LanguageTypeScript, Code: "let x = 1\nlet y z\n"}
	_, res = transpile(bad, 1000)
	if res == nil || res.Status != sandboxd.StatusError || res.ExitCode != 1 || res.Usage != nil ||
		res.Files != nil || res.Truncated || !strings.Contains(res.Stderr, "main.ts:2:") || res.Stdout != "" {
		t.Fatalf("syntax error: %+v", res)
	}
	_, cut := transpile(bad, 10)
	if cut == nil || cut.Stderr != res.Stderr[:10] || cut.Truncated || cut.Status != sandboxd.StatusError {
		t.Errorf("diagnostics past the output cap: %+v", cut)
	}
}

// offlineDocker is a runner whose daemon does not exist: what reaches
// Docker fails, what answers before it does not.
func offlineDocker(t *testing.T) *Docker {
	t.Helper()
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	d, err := New(testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	return d
}

func TestRunTypeScriptSyntaxErrorTakesNoContainer(t *testing.T) {
	d := offlineDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := d.Run(ctx, sandboxd.Job{ID: "j", Language: sandboxd.LanguageTypeScript, Code: "let y z\n"})
	if err != nil || res.Status != sandboxd.StatusError || res.ExitCode != 1 ||
		!strings.Contains(res.Stderr, "main.ts:1:") || res.Gone != nil {
		t.Errorf("syntax error: %+v, %v", res, err)
	}
	// A program that transpiles goes on to a container (and here finds no
	// daemon).
	if _, err := d.Run(ctx, sandboxd.Job{ID: "k", Language: sandboxd.LanguageTypeScript, Code: "let y = 1\n"}); err == nil {
		t.Error("a valid program was answered without a container")
	}
}

func TestSessionTypeScriptSyntaxErrorLeavesTheSession(t *testing.T) {
	// The session has no container: a call that reached it would fail.
	s := &Session{d: offlineDocker(t), language: sandboxd.LanguageTypeScript, ended: make(chan struct{})}
	res, err := s.Run(context.Background(), sandboxd.Job{ID: "j", Code: "const a: = 1\n"})
	if err != nil || res.Status != sandboxd.StatusError || res.ExitCode != 1 || res.Value != nil ||
		res.Ended || !strings.Contains(res.Stderr, "main.ts:1:") {
		t.Errorf("syntax error: %+v, %v", res, err)
	}
	s.reason = "closed"
	close(s.ended)
	if _, err := s.Run(context.Background(), sandboxd.Job{ID: "k", Code: "const a: = 1\n"}); sandboxd.ErrorCode(err) !=
		sandboxd.CodeUnavailable {
		t.Errorf("a call to an ended session: %v", err)
	}
}
