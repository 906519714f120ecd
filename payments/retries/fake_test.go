package retries

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"sandboxd"
)

// fakeStore is a Store in memory: the rows by (payer, key), their bytes,
// the payments rows' statuses; it counts its reads and can fail them.
type fakeStore struct {
	mu       sync.Mutex
	rows     map[watchKey]Meta
	bodies   map[watchKey][]byte
	payments map[watchKey]string
	err      error // every read fails with it when set
	sweep    SweepReport
	calls    map[string]int
}

func newFakeStore() *fakeStore {
	return &fakeStore{rows: map[watchKey]Meta{}, bodies: map[watchKey][]byte{}, payments: map[watchKey]string{},
		calls: map[string]int{}}
}

// put stores the row m (and its bytes, when body is not nil).
func (f *fakeStore) put(m Meta, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := watchKey{m.Payer, m.Key}
	f.rows[k] = m
	if body != nil {
		f.bodies[k] = body
	}
}

// remove deletes the row of (payer, key), as a release does.
func (f *fakeStore) remove(payer, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.rows, watchKey{payer, key})
	delete(f.bodies, watchKey{payer, key})
}

func (f *fakeStore) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func (f *fakeStore) LookupAnswer(_ context.Context, payer, key, id string) (Lookup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["lookup"]++
	if f.err != nil {
		return Lookup{}, f.err
	}
	var l Lookup
	for k, m := range f.rows {
		if k.payer != payer {
			continue
		}
		if k.key == key {
			m := m
			l.ByKey = &m
		}
		if id != "" && m.ID == id {
			m := m
			l.ByID = &m
		}
	}
	l.Payment = f.payments[watchKey{payer, key}]
	return l, nil
}

func (f *fakeStore) AnswerState(_ context.Context, payer, key string) (Meta, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["state"]++
	if f.err != nil {
		return Meta{}, f.err
	}
	m, ok := f.rows[watchKey{payer, key}]
	if !ok {
		return Meta{}, ErrNoAnswer
	}
	return m, nil
}

func (f *fakeStore) AnswerBody(_ context.Context, payer, key string) (Meta, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["body"]++
	if f.err != nil {
		return Meta{}, nil, f.err
	}
	m, ok := f.rows[watchKey{payer, key}]
	if !ok {
		return Meta{}, nil, ErrNoAnswer
	}
	return m, f.bodies[watchKey{payer, key}], nil
}

func (f *fakeStore) SweepAnswers(_ context.Context, maxBytes int64) (SweepReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["sweep"]++
	return f.sweep, f.err
}

// recorder is an Observer that keeps what it was told.
type recorder struct {
	mu       sync.Mutex
	lookups  []bool
	replays  []string // by/outcome
	kept     []bool
	sweeps   int
	sweepErr error
}

func (r *recorder) Lookup(found bool, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups = append(r.lookups, found)
}

func (r *recorder) Replay(by, outcome string, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replays = append(r.replays, by+"/"+outcome)
}

func (r *recorder) Kept(kept bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kept = append(r.kept, kept)
}

func (r *recorder) Swept(_ SweepReport, _ time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweeps++
	r.sweepErr = err
}

func (r *recorder) replaysSeen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.replays...)
}

// The fixtures: a payer, its payment's key and id, and a request.
const (
	payer   = "0x1111111111111111111111111111111111111111"
	nonce   = "0x00000000000000000000000000000000000000000000000000000000000000aa"
	other   = "0x00000000000000000000000000000000000000000000000000000000000000bb"
	payID   = "pay_7d5d747be160e280504c099d984bcfe0"
	request = "5f2b0c4ad4f1c0bb9a1f5d3c3b0f6e1a9c7d2e8f4a6b1c3d5e7f9a0b2c4d6e8f"
	another = "e8d6c4b2a0f9e7d5c3b1a6f4e8d2c7a9e1f6b0f3c3d5f1a9bb0c1f4da4c0b2f5"
)

// settled is the report of the fixtures' answer.
var settled = &sandboxd.Settlement{Version: 2, Success: true, Transaction: "0xabc", Network: "eip155:84532", Payer: payer}

// row is a kept answer of the fixtures in state.
func row(state string) Meta {
	m := Meta{Payer: payer, Key: nonce, ID: payID, Request: request, Kind: sandboxd.AnswerRun,
		Transport: sandboxd.TransportHTTP, State: state, X402Version: 2, Created: time.Unix(1_800_000_000, 0)}
	if state == StateReady || state == StatePending || state == StateHeld {
		m.Status, m.BodyBytes, m.AnswerBytes = 200, 11, 11
	}
	if state == StateReady || state == StatePending {
		m.Settlement = settled
	}
	return m
}

// testConfig is a valid configuration with a short wait.
func testConfig(wait time.Duration) Config {
	return Config{Wait: wait}.WithDefaults(time.Minute)
}

// mustKeeper returns a keeper of f with the options o and a recorder.
func mustKeeper(tb testing.TB, f *fakeStore, wait time.Duration, o Options) (*Keeper, *recorder) {
	tb.Helper()
	rec := &recorder{}
	o.Observer = rec
	return New(testConfig(wait), f, o), rec
}

// mustCode fails the test unless err is a *sandboxd.Error of code.
func mustCode(tb testing.TB, err error, code sandboxd.Code) *sandboxd.Error {
	tb.Helper()
	var e *sandboxd.Error
	if !errors.As(err, &e) || e.Code != code {
		tb.Fatalf("err = %v, want a *sandboxd.Error %s", err, code)
	}
	return e
}

func (r *recorder) sweepsSeen() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sweeps, r.sweepErr
}

func (r *recorder) keptSeen() []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bool(nil), r.kept...)
}

// watching returns the keeper's pollers and waiters.
func watching(k *Keeper) (watches, waiters int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.watches), k.waiters
}
