package fleethop

import (
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"sandboxd"
)

// testSecret is a fleet secret of the tests.
var testSecret = []byte("0123456789abcdef0123456789abcdef0123456789abcdef")

// TestVerifyVouchesForTheClient: a hop signed for this replica verifies
// and vouches for the caller's address it signs.
func TestVerifyVouchesForTheClient(t *testing.T) {
	const path = "/v1/sessions/ses_1/code"
	client, now := netip.MustParseAddr("198.51.100.4"), time.Now()
	good := Sign(testSecret, now, "POST", path, client, "b", "a")
	got, err := Verify(testSecret, "a", now, good, httptest.NewRequest("POST", path, nil))
	if err != nil || got.Client != client {
		t.Errorf("the hop vouches for %v, %v; want %v", got.Client, err, client)
	}
	if _, err := Verify(testSecret, "b", now, good, httptest.NewRequest("POST", path, nil)); sandboxd.ErrorCode(err) != sandboxd.CodeForbidden {
		t.Errorf("a hop for a verified on b: %v", err)
	}
}

// TestSeenTakesEachHopOnce: a replay within the skew is refused; a hop
// that can no longer verify is forgotten.
func TestSeenTakesEachHopOnce(t *testing.T) {
	var seen Seen
	now := time.Now()
	v := Verified{mac: "m", at: now}
	if err := seen.Take(v, now); err != nil {
		t.Fatal(err)
	}
	if err := seen.Take(v, now.Add(Skew)); sandboxd.ErrorCode(err) != sandboxd.CodeForbidden {
		t.Errorf("a replay within the skew: %v", err)
	}
	if err := seen.Take(Verified{mac: "n", at: now}, now.Add(Skew+2*time.Second)); err != nil || len(seen.macs) != 1 {
		t.Errorf("after the skew: %v, %d remembered, want 1", err, len(seen.macs))
	}
}
