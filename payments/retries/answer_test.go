package retries

import (
	"context"
	"errors"
	"testing"
	"time"

	"sandboxd"
)

// mustReplay finds the fixtures' payment and fails unless it is a replay.
func mustReplay(tb testing.TB, k *Keeper) sandboxd.Replay {
	tb.Helper()
	r, err := k.Find(context.Background(), Query{Payer: payer, Key: nonce, Request: request})
	if err != nil || r == nil {
		tb.Fatalf("Find = %v, %v; want a replay", r, err)
	}
	return r
}

// TestAnswerReady: a ready answer is read once, with its status, bytes,
// report and kind, and its time goes to the replay phase.
func TestAnswerReady(t *testing.T) {
	f := newFakeStore()
	f.put(row(StateReady), []byte(`{"ok":true}`))
	k, rec := mustKeeper(t, f, DefaultWait, Options{})
	r := mustReplay(t, k)
	phases := sandboxd.NewPhases(nil)
	ans, err := r.Answer(sandboxd.WithPhases(t.Context(), phases))
	if err != nil {
		t.Fatal(err)
	}
	if ans.Status != 200 || string(ans.Body) != `{"ok":true}` || ans.Settlement != settled || ans.Kind != sandboxd.AnswerRun ||
		!ans.Created.Equal(row(StateReady).Created) {
		t.Errorf("answer = %+v", ans)
	}
	if f.count("body") != 1 || f.count("state") != 0 {
		t.Errorf("reads: %v", f.calls)
	}
	if s := phases.Spans(); len(s) != 1 || s[0].Phase != sandboxd.PhaseReplay {
		t.Errorf("phases %v", s)
	}
	if got := rec.replaysSeen(); len(got) != 1 || got[0] != "payment/answered" {
		t.Errorf("observed %v", got)
	}
	if _, err := r.Reserve(t.Context()); sandboxd.ErrorCode(err) != sandboxd.CodeInternal {
		t.Errorf("Reserve = %v", err)
	}
}

// TestAnswerNotKept: an answer paid for whose bytes were not kept is a
// 410 with its original report (no body read when the row says so at
// once); a pending one a 202 with the pending report and the bytes kept.
func TestAnswerNotKept(t *testing.T) {
	for _, c := range []struct {
		name    string
		meta    func(*Meta)
		body    []byte
		code    sandboxd.Code
		outcome string
		reads   int
	}{
		{"too large", func(m *Meta) { m.Dropped, m.BodyBytes, m.AnswerBytes = DroppedTooLarge, 0, 20<<20 }, nil, sandboxd.CodeGone, "gone", 0},
		{"evicted after the lookup", func(m *Meta) {}, nil, sandboxd.CodeGone, "gone", 1},
		{"pending", func(m *Meta) {
			m.State = StatePending
			m.Settlement = &sandboxd.Settlement{Version: 2, ErrorReason: "settlement_pending", Transaction: "0xabc"}
		}, []byte(`{"session_id":"s"}`), sandboxd.CodePending, "pending", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeStore()
			m := row(StateReady)
			c.meta(&m)
			f.put(m, c.body)
			k, rec := mustKeeper(t, f, DefaultWait, Options{})
			ans, err := mustReplay(t, k).Answer(t.Context())
			e := mustCode(t, err, c.code)
			if e.Payment == nil || e.Payment.Settlement != m.Settlement {
				t.Errorf("report = %+v", e.Payment)
			}
			if (ans != nil) != (c.body != nil) || f.count("body") != c.reads {
				t.Errorf("answer %+v, %d body reads", ans, f.count("body"))
			}
			if got := rec.replaysSeen(); got[0] != "payment/"+c.outcome {
				t.Errorf("observed %v", got)
			}
		})
	}
}

// TestAnswerUnavailable: a body that cannot be read is a 503.
func TestAnswerUnavailable(t *testing.T) {
	f := newFakeStore()
	f.put(row(StateReady), []byte(`{}`))
	k, _ := mustKeeper(t, f, DefaultWait, Options{})
	r := mustReplay(t, k)
	f.err = errors.New("connection reset")
	_, err := r.Answer(t.Context())
	mustCode(t, err, sandboxd.CodeUnavailable)
}

// TestAnswerRowGone: a row gone between the lookup and the read (its
// payment released) is "not delivered": 409, retry after a second.
func TestAnswerRowGone(t *testing.T) {
	f := newFakeStore()
	f.put(row(StateReady), []byte(`{}`))
	k, _ := mustKeeper(t, f, DefaultWait, Options{})
	r := mustReplay(t, k)
	f.remove(payer, nonce)
	_, err := r.Answer(t.Context())
	if e := mustCode(t, err, sandboxd.CodeConflict); e.RetryAfter != time.Second {
		t.Errorf("retry after %s", e.RetryAfter)
	}
}
