package runtime

import (
	"context"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
)

// slowRemovalFiles is how many files a container of
// TestRemoveWaitsForAnotherRemoval leaves in its writable layer: enough that
// dockerd takes a while to delete them, so a second removal meets the first.
const slowRemovalFiles = 20000

// TestRemoveWaitsForAnotherRemoval proves that remove returns only once the
// container is gone when another removal of it is already in progress: the
// daemon answers the second call at once with a conflict, and a remove that
// took that for done left a container "removing" after Close (the hostile
// suite's check of an instance caught one under runsc in stop 35's CI).
// Each try starts a removal straight through the Engine API, waits until
// the daemon shows the container "removing", then calls remove; tries whose
// first removal ended before it was seen do not count.
func TestRemoveWaitsForAnotherRemoval(t *testing.T) {
	d := mustDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const tries, wantMet = 10, 2
	met := 0
	for i := 0; i < tries && met < wantMet; i++ {
		id := filledContainer(t, ctx, d)
		first := make(chan error, 1)
		go func() {
			first <- d.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
		}()
		if !seenRemoving(ctx, d, id) {
			t.Logf("try %d: the first removal ended before it was seen in progress", i)
			if err := <-first; err != nil {
				t.Fatalf("the first removal: %v", err)
			}
			continue
		}
		met++
		if err := d.remove(ctx, id); err != nil {
			t.Fatalf("try %d: remove beside a removal in progress: %v", i, err)
		}
		if ins, err := d.cli.ContainerInspect(ctx, id); !cerrdefs.IsNotFound(err) {
			state := "?"
			if err == nil {
				state = ins.State.Status
			}
			t.Fatalf("try %d: remove returned while the container was still there (state %s, inspect error %v)", i, state, err)
		}
		if err := <-first; err != nil {
			t.Fatalf("try %d: the first removal: %v", i, err)
		}
	}
	if met < wantMet {
		t.Fatalf("only %d of %d tries caught a removal in progress (%d files each): the test proves nothing here", met, tries, slowRemovalFiles)
	}
}

// filledContainer runs a container of the test image, outside the runner's
// spec (its root file system writable), whose program writes
// slowRemovalFiles files into its writable layer and exits, and returns its
// ID once it has exited. It carries the test's labels, so a leftover is
// reported.
func filledContainer(t *testing.T, ctx context.Context, d *Docker) string {
	t.Helper()
	code := "import os\nos.makedirs('/tmp/f')\nfor i in range(" + itoa(slowRemovalFiles) + "):\n" +
		"    open('/tmp/f/%d' % i, 'w').close()\n"
	resp, err := d.cli.ContainerCreate(ctx, &container.Config{
		Image:           testImage,
		Entrypoint:      []string{"/usr/bin/python3", "-c", code},
		Labels:          labels(testInstance, jobID(t)),
		NetworkDisabled: true,
	}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = d.remove(context.Background(), resp.ID) })
	wait, werr := d.cli.ContainerWait(ctx, resp.ID, container.WaitConditionNextExit)
	if err := d.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start: %v", err)
	}
	select {
	case w := <-wait:
		if w.StatusCode != 0 {
			t.Fatalf("the program that fills the container exited %d", w.StatusCode)
		}
	case err := <-werr:
		t.Fatalf("wait: %v", err)
	}
	return resp.ID
}

// seenRemoving polls the container's state until the daemon shows it
// "removing" (true) or it is gone (false).
func seenRemoving(ctx context.Context, d *Docker, id string) bool {
	for ctx.Err() == nil {
		ins, err := d.cli.ContainerInspect(ctx, id)
		switch {
		case err != nil:
			return false
		case ins.State.Status == "removing":
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}
