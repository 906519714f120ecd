package retries

import (
	"context"
	"time"

	"sandboxd"
)

// watchKey names a payment's row.
type watchKey struct{ payer, key string }

// watch is the one poller of a payment on this replica and the retries
// waiting for its first request: however many wait, the row is read once
// per PollEvery, and at once when Signal says it changed here.
type watch struct {
	key     watchKey
	waiters int
	kick    chan struct{} // Signal: read now
	stop    chan struct{} // closed when the last waiter left before the end
	done    chan struct{} // closed once meta or err is final
	meta    Meta
	err     error
}

// Signal tells the keeper that the row of (payer, key) changed on this
// replica (the charge calls it after each of its ledger writes): its
// waiting retries, if any, read it at once instead of at the next poll.
func (k *Keeper) Signal(payer, key string) {
	k.mu.Lock()
	w := k.watches[watchKey{payer, key}]
	k.mu.Unlock()
	if w == nil {
		return
	}
	select {
	case w.kick <- struct{}{}:
	default: // a read is asked for already
	}
}

// wait waits, up to Config.Wait, until the row of (payer, key) is no
// longer running or held, and returns it; else the Observer's outcome and
// the refusal: CodeBusy when too many retries wait, CodeConflict (not
// delivered) when the row went, CodeConflict (in progress) when the wait
// ran out, the read's error, or ctx's.
func (k *Keeper) wait(ctx context.Context, payer, key string) (Meta, string, error) {
	w, err := k.join(watchKey{payer, key})
	if err != nil {
		return Meta{}, OutcomeBusy, err
	}
	defer k.leave(w)
	timer := time.NewTimer(k.cfg.Wait)
	defer timer.Stop()
	select {
	case <-w.done:
	case <-timer.C:
		return Meta{}, OutcomeInProgress, inProgress()
	case <-ctx.Done():
		return Meta{}, OutcomeFailed, ctx.Err()
	}
	switch {
	case w.err == nil:
		return w.meta, "", nil
	case isNoAnswer(w.err):
		return Meta{}, OutcomeNotDelivered, notDelivered()
	default:
		return Meta{}, OutcomeFailed, readFailed(ctx, "retries.wait", w.err)
	}
}

// join counts one more waiter of the payment k, starting its poller if it
// has none; CodeBusy past MaxWaiters.
func (k *Keeper) join(key watchKey) (*watch, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.waiters >= k.opts.MaxWaiters {
		return nil, &sandboxd.Error{Code: sandboxd.CodeBusy, Op: "retries.wait", RetryAfter: time.Second,
			Message: "too many retries are waiting for their first request; nothing was reserved or charged, " +
				"retry after the time in Retry-After"}
	}
	w := k.watches[key]
	if w == nil {
		w = &watch{key: key, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
		k.watches[key] = w
		go k.poll(w)
	}
	w.waiters++
	k.waiters++
	return w, nil
}

// leave counts a waiter out; the last one out stops a poller still going.
func (k *Keeper) leave(w *watch) {
	k.mu.Lock()
	defer k.mu.Unlock()
	w.waiters--
	k.waiters--
	if w.waiters == 0 && k.watches[w.key] == w {
		delete(k.watches, w.key)
		close(w.stop)
	}
}

// poll reads w's row now, then every PollEvery or when kicked, until it is
// no longer running or held, cannot be read, or nobody waits.
func (k *Keeper) poll(w *watch) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-w.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	tick := time.NewTicker(k.opts.PollEvery)
	defer tick.Stop()
	for {
		m, err := k.store.AnswerState(ctx, w.key.payer, w.key.key)
		if ctx.Err() != nil {
			return // nobody waits
		}
		if err != nil || !waiting(m.State) {
			k.finish(w, m, err)
			return
		}
		select {
		case <-tick.C:
		case <-w.kick:
		case <-w.stop:
			return
		}
	}
}

// finish publishes the final read of w's row to its waiters; a retry that
// comes later starts a poller of its own.
func (k *Keeper) finish(w *watch, m Meta, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.watches[w.key] == w {
		delete(k.watches, w.key)
	}
	w.meta, w.err = m, err
	close(w.done)
}
