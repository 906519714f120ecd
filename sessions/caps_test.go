package sessions

import (
	"context"
	"testing"
	"time"

	"sandboxd"
)

// claim holds and claims a session for owner and client, returning the
// claim's error; the hold is released with the test.
func (h *harness) claim(tb testing.TB, owner, client string) error {
	tb.Helper()
	hold, err := h.t.Hold(context.Background(), "python", sandboxd.LanguagePython)
	if err != nil {
		tb.Fatalf("hold: %v", err)
	}
	tb.Cleanup(hold.Release)
	return hold.Claim(context.Background(), owner, client)
}

// TestPerPayerCapHoldsAcrossTheFleet: sessions a wallet holds on other
// replicas count against sessions.max_per_payer here; a registry that
// cannot be read refuses the claim (nothing is reserved yet).
func TestPerPayerCapHoldsAcrossTheFleet(t *testing.T) {
	reg := newFakeRegistry()
	cfg := testConfig()
	cfg.Registry = reg
	h := newHarness(t, cfg)
	reg.elsewhere["0xa"] = 1
	h.mustOpen(t, "python", "0xa")
	wantCode(t, h.claim(t, "0xa", ""), sandboxd.CodeBusy, "this wallet holds 2 sessions already")
	if err := h.claim(t, "0xb", ""); err != nil {
		t.Fatalf("another wallet: %v", err)
	}
	reg.mu.Lock()
	reg.heldErr = sandboxd.Errorf(sandboxd.CodeUnavailable, "fake", "the ledger is down")
	reg.mu.Unlock()
	wantCode(t, h.claim(t, "0xc", ""), sandboxd.CodeUnavailable, "registry")
}

// TestFreeClientCap: a free session counts against its client's
// sessions.max_per_client; a paid one only against its wallet's.
func TestFreeClientCap(t *testing.T) {
	cfg := testConfig()
	cfg.MaxPerClient = 1
	h := newHarness(t, cfg)
	if err := h.claim(t, "", "192.0.2.1/32"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, h.claim(t, "", "192.0.2.1/32"), sandboxd.CodeBusy, "this address holds 1 sessions")
	if err := h.claim(t, "", "192.0.2.2/32"); err != nil {
		t.Fatalf("another client: %v", err)
	}
	if err := h.claim(t, "0xa", "192.0.2.1/32"); err != nil {
		t.Fatalf("a paid session from the same address: %v", err)
	}
}

// TestRoomHoldsNothing: Room says whether a session fits without taking
// the room; only Hold takes it.
func TestRoomHoldsNothing(t *testing.T) {
	cfg := testConfig()
	cfg.Max = 1
	h := newHarness(t, cfg)
	for range 3 {
		if err := h.t.Room("python"); err != nil {
			t.Fatalf("room: %v", err)
		}
	}
	h.mustOpen(t, "python", "")
	wantCode(t, h.t.Room("python"), sandboxd.CodeBusy, "every session is taken")
	wantCode(t, h.t.Room("nope"), sandboxd.CodeInvalid, "has no sessions")
}

// TestCapsFreeWhenTheSessionLeaves: a wallet's or client's cap counts
// sessions in the table: one being closed (its container still being
// removed) no longer counts, so its owner opens the next at once.
func TestCapsFreeWhenTheSessionLeaves(t *testing.T) {
	cfg := testConfig()
	cfg.MaxPerPayer = 1
	h := newHarness(t, cfg)
	info := h.mustOpen(t, "python", "0xa")
	c := h.engine.last()
	block := make(chan struct{})
	c.mu.Lock()
	c.closeBlock = block
	c.mu.Unlock()
	closed := make(chan error, 1)
	go func() { closed <- h.t.Close(context.Background(), info.ID) }()
	defer func() {
		close(block)
		if err := <-closed; err != nil {
			t.Error(err)
		}
	}()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := h.t.Get(context.Background(), info.ID); err != nil {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the session did not leave the table")
		}
	}
	if err := h.claim(t, "0xa", ""); err != nil {
		t.Fatalf("the wallet's next session while the last one's container is removed: %v", err)
	}
}
