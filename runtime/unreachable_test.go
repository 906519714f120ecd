package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

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

// TestAttachToAGoneDaemonIsUnavailable: an attach that cannot dial the
// daemon (its socket removed, as while dockerd stops) is a daemon gone,
// whatever a ping over a kept-alive connection says. The hijacked attach is
// the call the client does not mark as a failed connection. No daemon is
// contacted: the socket does not exist.
func TestAttachToAGoneDaemonIsUnavailable(t *testing.T) {
	cli, err := client.NewClientWithOpts(client.WithHost("unix:///nonexistent/docker.sock"), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	_, err = cli.ContainerAttach(context.Background(), "c", container.AttachOptions{Stream: true, Stdin: true})
	if err == nil {
		t.Fatal("attach to a missing socket succeeded")
	}
	if !dialFailed(err) {
		t.Errorf("dialFailed(%v) = false; an attach that cannot dial is a daemon gone", err)
	}
	if dialFailed(errors.New("Error response from daemon: No such container: c")) {
		t.Error("an answer from the daemon counted as a failed dial")
	}
}
