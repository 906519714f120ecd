package retries

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"sandboxd"
)

// answerAsync runs r.Answer in a goroutine; the channel gets its error.
func answerAsync(ctx context.Context, r sandboxd.Replay) <-chan error {
	out := make(chan error, 1)
	go func() {
		_, err := r.Answer(ctx)
		out <- err
	}()
	return out
}

// TestWaitSignal: a retry of a running request waits; the charge's Signal
// on this replica wakes it at once (the poll is an hour away), and it
// answers what the first delivered.
func TestWaitSignal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		f.put(row(StateRunning), nil)
		k, rec := mustKeeper(t, f, DefaultWait, Options{PollEvery: time.Hour})
		done := answerAsync(t.Context(), mustReplay(t, k))
		synctest.Wait()
		f.put(row(StateHeld), []byte(`{"ok":true}`))
		k.Signal(payer, nonce)
		synctest.Wait()
		f.put(row(StateReady), nil)
		began := time.Now()
		k.Signal(payer, nonce)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if time.Since(began) != 0 || f.count("state") != 3 {
			t.Errorf("woken after %s, %d state reads", time.Since(began), f.count("state"))
		}
		if got := rec.replaysSeen(); got[0] != "payment/answered" {
			t.Errorf("observed %v", got)
		}
		if w, n := watching(k); w != 0 || n != 0 {
			t.Errorf("left %d watches, %d waiters", w, n)
		}
	})
}

// TestWaitPoll: without a Signal (the first runs on another replica) the
// poller sees the row ready at its next read.
func TestWaitPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		f.put(row(StateRunning), nil)
		k, _ := mustKeeper(t, f, DefaultWait, Options{})
		began := time.Now()
		done := answerAsync(t.Context(), mustReplay(t, k))
		time.Sleep(time.Second)
		f.put(row(StateReady), []byte(`{"ok":true}`))
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if d := time.Since(began); d > time.Second+DefaultPollEvery {
			t.Errorf("answered after %s", d)
		}
	})
}

// TestWaitOutcomes: a wait that runs out is 409 in progress (retry after
// 2 s); a row deleted meanwhile is 409 not delivered (1 s); a caller that
// leaves gets its context's error; each stops its poller.
func TestWaitOutcomes(t *testing.T) {
	for _, c := range []struct {
		name    string
		during  func(*fakeStore, context.CancelFunc)
		retry   time.Duration
		outcome string
	}{
		{"wait runs out", func(*fakeStore, context.CancelFunc) {}, 2 * time.Second, "in_progress"},
		{"released", func(f *fakeStore, _ context.CancelFunc) { f.remove(payer, nonce) }, time.Second, "not_delivered"},
		{"caller left", func(_ *fakeStore, cancel context.CancelFunc) { cancel() }, 0, "failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeStore()
				f.put(row(StateRunning), nil)
				k, rec := mustKeeper(t, f, 5*time.Second, Options{})
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				done := answerAsync(ctx, mustReplay(t, k))
				time.Sleep(time.Second)
				c.during(f, cancel)
				err := <-done
				if c.retry == 0 {
					if err != context.Canceled {
						t.Errorf("err = %v", err)
					}
				} else if e := mustCode(t, err, sandboxd.CodeConflict); e.RetryAfter != c.retry {
					t.Errorf("retry after %s", e.RetryAfter)
				}
				synctest.Wait()
				reads := f.count("state")
				time.Sleep(time.Second)
				if w, n := watching(k); f.count("state") != reads || w != 0 || n != 0 {
					t.Errorf("poller left: %d reads then %d, %d watches, %d waiters", reads, f.count("state"), w, n)
				}
				if got := rec.replaysSeen(); got[0] != "payment/"+c.outcome {
					t.Errorf("observed %v", got)
				}
			})
		})
	}
}

// TestWaitCoalesced: a hundred retries of one payment share one poller:
// the row is read once per poll, not once per retry; all get the answer.
func TestWaitCoalesced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		f.put(row(StateRunning), nil)
		k, _ := mustKeeper(t, f, DefaultWait, Options{MaxWaiters: 100})
		r := mustReplay(t, k)
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		for range 100 {
			wg.Go(func() {
				_, err := r.Answer(t.Context())
				errs <- err
			})
		}
		time.Sleep(time.Second)
		f.put(row(StateReady), []byte(`{"ok":true}`))
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		polls := int(time.Second/DefaultPollEvery) + 2
		if n := f.count("state"); n > polls {
			t.Errorf("%d state reads for 100 retries over a second, want at most %d", n, polls)
		}
	})
}

// TestWaitBounded: past MaxWaiters a retry is refused at once (429, retry
// after a second); a retry whose row is ready never waits, so it passes.
func TestWaitBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		f.put(row(StateRunning), nil)
		f.put(Meta{Payer: payer, Key: other, Request: request, State: StateReady, Status: 200, Settlement: settled}, []byte(`{}`))
		k, rec := mustKeeper(t, f, DefaultWait, Options{MaxWaiters: 2})
		r := mustReplay(t, k)
		first, second := answerAsync(t.Context(), r), answerAsync(t.Context(), r)
		synctest.Wait()
		_, err := r.Answer(t.Context())
		if e := mustCode(t, err, sandboxd.CodeBusy); e.RetryAfter != time.Second {
			t.Errorf("retry after %s", e.RetryAfter)
		}
		ready, _ := k.Find(t.Context(), Query{Payer: payer, Key: other, Request: request})
		if _, err := ready.Answer(t.Context()); err != nil {
			t.Errorf("a ready answer behind full waiters: %v", err)
		}
		f.put(row(StateReady), []byte(`{}`))
		k.Signal(payer, nonce)
		if <-first != nil || <-second != nil {
			t.Error("the waiters were not answered")
		}
		if got := rec.replaysSeen(); got[0] != "payment/busy" {
			t.Errorf("observed %v", got)
		}
	})
}

// TestSignalNobody: a Signal with nobody waiting reads nothing.
func TestSignalNobody(t *testing.T) {
	f := newFakeStore()
	k, _ := mustKeeper(t, f, DefaultWait, Options{})
	k.Signal(payer, nonce)
	if len(f.calls) != 0 {
		t.Errorf("calls %v", f.calls)
	}
}

// TestWaitByID: a retry by id with a new payment waits on the first
// payment's row (its key, not the retry's), woken by that row's Signal.
func TestWaitByID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		f.put(row(StateRunning), nil)
		k, _ := mustKeeper(t, f, DefaultWait, Options{PollEvery: time.Hour})
		r, err := k.Find(t.Context(), Query{Payer: payer, Key: other, ID: payID, Request: request, Fresh: true})
		if err != nil || r == nil || r.By() != sandboxd.ReplayByID {
			t.Fatalf("Find = %v, %v", r, err)
		}
		done := answerAsync(t.Context(), r)
		synctest.Wait()
		f.put(row(StateReady), []byte(`{"ok":true}`))
		k.Signal(payer, other) // the retry's own key: nothing waits on it
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("woken by another key's signal: %v", err)
		default:
		}
		k.Signal(payer, nonce)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
