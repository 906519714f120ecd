package runtime

import (
	"context"
	"testing"
	"time"
)

// TestTasksWaitIsForWorkAddedBefore: a wait ends once the tasks added
// before it have, though others are added and pending meanwhile, as the
// removals of other runs are on a busy runner (WaitRemovals).
func TestTasksWaitIsForWorkAddedBefore(t *testing.T) {
	var bg tasks
	first := bg.add()
	waited := make(chan error, 1)
	go func() { waited <- bg.wait(context.Background()) }()
	time.Sleep(100 * time.Millisecond) // the wait begins before the next add
	later := bg.add()
	select {
	case err := <-waited:
		t.Fatalf("the wait ended (%v) with a task added before it pending", err)
	case <-time.After(20 * time.Millisecond):
	}
	bg.done(first)
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("wait: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the wait did not end once the task added before it had: it waited for one added later")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := bg.wait(ctx); err == nil {
		t.Fatal("a wait begun with a task pending ended before it")
	}
	bg.done(later)
	if err := bg.wait(context.Background()); err != nil {
		t.Fatalf("wait with nothing pending: %v", err)
	}
}
