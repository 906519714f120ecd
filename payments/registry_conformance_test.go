package payments

import (
	"context"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
)

// TestRegistryConformance: the fleet's session registry, on both backends.
// A session opened on replica a is found by replica b at a's address; its
// calls and end are recorded; a session of a replica that never beat (its
// lease long gone) is reported ended, its host gone (a why that names no
// replica: callers read it), and EndStale marks it so; a restart ends a replica's own sessions; the listing counts open
// sessions by replica, and no id is ever stored.
func TestRegistryConformance(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		loc := b.Location(t)
		a := ledgertest.Open(t, ledger.Config{Ledger: loc, Replica: "a"})
		bl := b.Sibling(t, a, ledger.Config{Ledger: loc, Replica: "b"})
		ra, rb := a.Registry("http://10.0.0.11:8080"), bl.Registry("http://10.0.0.12:8080")
		now := time.Now()
		const id = "ses_0123456789abcdef0123456789abcdef"
		h := sandboxd.SessionHash(id)
		if err := ra.Opened(ctx, sandboxd.SessionRecord{Hash: h, Owner: "0xAbC", Environment: "python", Created: now, Expires: now.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if err := ra.Opened(ctx, sandboxd.SessionRecord{Hash: h, Environment: "python", Created: now, Expires: now}); err == nil {
			t.Error("a second session under the same hash was recorded")
		}
		p, err := rb.Locate(ctx, h)
		if err != nil || p.Replica != "a" || p.URL != "http://10.0.0.11:8080" || p.Here || p.Ended || p.Environment != "python" {
			t.Fatalf("b locates a's session: %+v, %v", p, err)
		}
		if p, err := ra.Locate(ctx, h); err != nil || !p.Here {
			t.Errorf("a locates its own session: %+v, %v", p, err)
		}
		if err := ra.Called(ctx, h, now, now.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := ra.Ended(ctx, h, "this session was closed"); err != nil {
			t.Fatal(err)
		}
		if p, err := rb.Locate(ctx, h); err != nil || !p.Ended || p.Why != "this session was closed" {
			t.Errorf("b locates a's closed session: %+v, %v", p, err)
		}
		if _, err := rb.Locate(ctx, sandboxd.SessionHash("ses_unknown")); sandboxd.ErrorCode(err) != sandboxd.CodeNotFound {
			t.Errorf("an unknown session: %v, want CodeNotFound", err)
		}

		// A replica that never beat holds a session: its host is gone.
		dead := a.As("dead", nil).Registry("http://10.0.0.13:8080")
		gone := sandboxd.SessionHash("ses_gone")
		if err := dead.Opened(ctx, sandboxd.SessionRecord{Hash: gone, Environment: "data", Created: now, Expires: now.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		// Its why is shown to callers: it names no replica.
		if p, err := rb.Locate(ctx, gone); err != nil || !p.Ended || !strings.Contains(p.Why, "host is gone") || strings.Contains(p.Why, "dead") {
			t.Errorf("a session of a silent replica: %+v, %v", p, err)
		}
		live := sandboxd.SessionHash("ses_live")
		if err := ra.Opened(ctx, sandboxd.SessionRecord{Hash: live, Environment: "python", Created: now, Expires: now.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if n, err := rb.EndStale(ctx); err != nil || n != 1 {
			t.Errorf("EndStale: %d, %v; want the silent replica's one session", n, err)
		}
		if p, err := ra.Locate(ctx, gone); err != nil || !p.Ended || !strings.Contains(p.Why, "stopped answering") || strings.Contains(p.Why, "dead") {
			t.Errorf("after EndStale: %+v, %v", p, err)
		}
		open, err := a.OpenSessions(ctx, 0)
		if err != nil || len(open) != 1 || open[0].Replica != "a" || open[0].Open != 1 || !open[0].Alive || open[0].Environment != "python" {
			t.Errorf("open sessions: %+v, %v; want a's one", open, err)
		}

		// A restart of a ends what it held.
		if n, err := ra.EndOwn(ctx); err != nil || n != 1 {
			t.Errorf("EndOwn: %d, %v; want 1", n, err)
		}
		if p, err := rb.Locate(ctx, live); err != nil || !p.Ended || !strings.Contains(p.Why, "restarted") {
			t.Errorf("after a's restart: %+v, %v", p, err)
		}

		// The table never holds an id.
		db := ledgertest.RawDB(t, b, loc)
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions WHERE id_hash LIKE 'ses_%'`).Scan(&n); err != nil || n != 0 {
			t.Errorf("%d rows keyed by an id, %v", n, err)
		}
	})
}
