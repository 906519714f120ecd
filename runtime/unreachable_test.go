package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"sandboxd"
)

// TestUnreachableEngineNamesNoHost: with the daemon unreachable, Health's
// message (a 503 body) names neither the socket nor a host; the cause, for
// the operator's log, does. No daemon is contacted.
func TestUnreachableEngineNamesNoHost(t *testing.T) {
	for _, host := range []string{"unix:///nonexistent/secret-dir/docker.sock", "tcp://127.0.0.1:1"} {
		t.Setenv("DOCKER_HOST", host)
		d, err := New(testConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = d.Health(ctx)
		cancel()
		if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
			t.Fatalf("%s: Health = %v, want unavailable", host, err)
		}
		msg := sandboxd.ErrorMessage(err)
		for _, leak := range []string{"secret-dir", "docker.sock", "unix:", "127.0.0.1", "tcp:"} {
			if strings.Contains(msg, leak) {
				t.Errorf("%s: message %q names %q", host, msg, leak)
			}
		}
		if !strings.Contains(err.Error(), strings.TrimPrefix(strings.TrimPrefix(host, "unix://"), "tcp://")) {
			t.Errorf("%s: the cause %q does not name the host for the operator", host, err)
		}
		_ = d.Close(context.Background())
	}
}
