package sessions

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"sandboxd"
)

// fakeRegistry records what the table tells the fleet's registry.
type fakeRegistry struct {
	mu      sync.Mutex
	openErr error
	opened  map[string]sandboxd.SessionRecord
	called  map[string]int
	ended   map[string]string
	// elsewhere counts each owner's sessions on other replicas; heldErr
	// fails Held.
	elsewhere map[string]int
	heldErr   error
}

func newFakeRegistry() *fakeRegistry {
	return &fakeRegistry{opened: map[string]sandboxd.SessionRecord{}, called: map[string]int{}, ended: map[string]string{}, elsewhere: map[string]int{}}
}

func (r *fakeRegistry) Opened(_ context.Context, s sandboxd.SessionRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.openErr != nil {
		return r.openErr
	}
	r.opened[s.Hash] = s
	return nil
}

func (r *fakeRegistry) Called(_ context.Context, hash string, _, _ time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.called[hash]++
	return nil
}

func (r *fakeRegistry) Ended(_ context.Context, hash, why string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended[hash] = why
	return nil
}

func (r *fakeRegistry) Held(_ context.Context, owner string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.heldErr != nil {
		return 0, r.heldErr
	}
	n := r.elsewhere[owner]
	for h, s := range r.opened {
		if _, ended := r.ended[h]; !ended && s.Owner == owner {
			n++
		}
	}
	return n, nil
}

func (r *fakeRegistry) Locate(context.Context, string) (sandboxd.SessionPlace, error) {
	return sandboxd.SessionPlace{}, errors.New("the table never locates")
}

// TestRegistryFollowsASession: the registry hears of a session's open
// (under its id's hash, with its owner and environment), of each call and
// of its end with the reason a caller is told.
func TestRegistryFollowsASession(t *testing.T) {
	reg := newFakeRegistry()
	cfg := testConfig()
	cfg.Registry = reg
	h := newHarness(t, cfg)
	info := h.mustOpen(t, "data", "0xowner")
	hash := sandboxd.SessionHash(info.ID)
	reg.mu.Lock()
	rec, ok := reg.opened[hash]
	reg.mu.Unlock()
	if !ok || rec.Owner != "0xowner" || rec.Environment != "data" || !rec.Expires.Equal(info.Expires) {
		t.Fatalf("opened: %+v (%v)", rec, ok)
	}
	h.mustCall(t, info.ID, "0xowner")
	h.mustCall(t, info.ID, "0xowner")
	if err := h.t.Close(context.Background(), info.ID); err != nil {
		t.Fatal(err)
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.called[hash] != 2 || reg.ended[hash] != "this session was closed" {
		t.Errorf("calls %d, ended %q", reg.called[hash], reg.ended[hash])
	}
}

// TestRegistryRefusalOpensNothing: a session the registry cannot record
// is not opened: the start fails as CodeUnavailable, its container is
// removed and its room given back, so its opening is not charged.
func TestRegistryRefusalOpensNothing(t *testing.T) {
	reg := newFakeRegistry()
	reg.openErr = sandboxd.Errorf(sandboxd.CodeUnavailable, "fake", "the ledger is down")
	cfg := testConfig()
	cfg.Registry = reg
	h := newHarness(t, cfg)
	ctx := context.Background()
	hold, err := h.t.Hold(ctx, "python", sandboxd.LanguagePython)
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Claim(ctx, "0xowner", ""); err != nil {
		t.Fatal(err)
	}
	_, err = hold.Start(ctx)
	hold.Release()
	wantCode(t, err, sandboxd.CodeUnavailable, "ledger")
	if c := h.engine.last(); c == nil || c.count(&c.closed) == 0 {
		t.Errorf("the container of the unrecorded session was not closed")
	}
	if count, mem, owners := h.held(); count != 0 || mem != 0 || owners != 0 {
		t.Errorf("room still held: %d sessions, %d bytes, %d owners", count, mem, owners)
	}
}
