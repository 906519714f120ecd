package slots

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"sandboxd"
)

func TestAdmitUpToCapacity(t *testing.T) {
	s := New(2, 0)
	r1, err1 := s.Admit(context.Background())
	r2, err2 := s.Admit(context.Background())
	if err1 != nil || err2 != nil {
		t.Fatalf("admit within capacity: %v, %v", err1, err2)
	}
	if _, err := s.Admit(context.Background()); sandboxd.ErrorCode(err) != sandboxd.CodeBusy {
		t.Fatalf("third admit: got %v, want busy", err)
	}
	r1()
	r1() // a second release must not free a second slot
	if got := s.InUse(); got != 1 {
		t.Fatalf("in use after one release: %d", got)
	}
	r2()
}

func TestAdmitWaitsForAFreedSlot(t *testing.T) {
	s := New(1, time.Second)
	release, _ := s.Admit(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); release() }()
	r, err := s.Admit(context.Background())
	if err != nil {
		t.Fatalf("waiting admit: %v", err)
	}
	r()
}

func TestAdmitGivesUpAfterQueueWait(t *testing.T) {
	s := New(1, 30*time.Millisecond)
	release, _ := s.Admit(context.Background())
	defer release()
	start := time.Now()
	_, err := s.Admit(context.Background())
	var e *sandboxd.Error
	if !errors.As(err, &e) || e.Code != sandboxd.CodeBusy || e.RetryAfter <= 0 {
		t.Fatalf("got %v, want busy with RetryAfter", err)
	}
	if waited := time.Since(start); waited < 30*time.Millisecond {
		t.Fatalf("gave up after %v, before the queue wait", waited)
	}
}

func TestAdmitHonoursContext(t *testing.T) {
	s := New(1, time.Minute)
	release, _ := s.Admit(context.Background())
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Admit(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestNeverMoreThanCapacity(t *testing.T) {
	s := New(3, time.Second)
	var mu sync.Mutex
	inside, peak := 0, 0
	var wg sync.WaitGroup
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := s.Admit(context.Background())
			if err != nil {
				return
			}
			mu.Lock()
			inside++
			peak = max(peak, inside)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			inside--
			mu.Unlock()
			release()
		}()
	}
	wg.Wait()
	if peak > 3 {
		t.Fatalf("peak %d runs at once, capacity 3", peak)
	}
}
