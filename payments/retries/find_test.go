package retries

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sandboxd"
)

// TestFind: the rules of docs/design/retries.md §4.3, in order: by id
// (the payment its row's own or fresh), then by payment, else nothing;
// an old payment learns nothing of the id.
func TestFind(t *testing.T) {
	idRow := row(StateReady) // the id's row, of the payment nonce
	for _, c := range []struct {
		name    string
		rows    []Meta
		payment string // the status of the payments row of the query's key
		q       Query
		want    string // "payment", "id", "conflict" or "" (nothing)
	}{
		{"nothing kept", nil, "", Query{Key: other, ID: payID, Request: request, Fresh: true}, ""},
		{"same payment, same request", []Meta{idRow}, "settled", Query{Key: nonce, Request: request}, "payment"},
		{"same payment, another request", []Meta{idRow}, "settled", Query{Key: nonce, Request: another}, ""},
		{"same payment and id, same request", []Meta{idRow}, "settled",
			Query{Key: nonce, ID: payID, Request: request}, "id"},
		{"same payment and id, another request", []Meta{idRow}, "settled",
			Query{Key: nonce, ID: payID, Request: another}, "conflict"},
		{"fresh payment, id, same request", []Meta{idRow}, "", Query{Key: other, ID: payID, Request: request, Fresh: true}, "id"},
		{"fresh payment, id, another request", []Meta{idRow}, "",
			Query{Key: other, ID: payID, Request: another, Fresh: true}, "conflict"},
		{"released payment, id", []Meta{idRow}, "released",
			Query{Key: other, ID: payID, Request: request, Fresh: true}, "id"},
		{"expired payment, id", []Meta{idRow}, "", Query{Key: other, ID: payID, Request: request}, ""},
		{"used payment, id", []Meta{idRow}, "settled", Query{Key: other, ID: payID, Request: request, Fresh: true}, ""},
		{"used payment, id, another request", []Meta{idRow}, "settled",
			Query{Key: other, ID: payID, Request: another, Fresh: true}, ""},
		{"unknown id, same payment", []Meta{idRow}, "settled",
			Query{Key: nonce, ID: "pay_00000000000000000000", Request: request}, "payment"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeStore()
			for _, m := range c.rows {
				f.put(m, []byte(`{"ok":true}`))
			}
			c.q.Payer = payer
			if c.payment != "" {
				f.payments[watchKey{payer, c.q.Key}] = c.payment
			}
			k, rec := mustKeeper(t, f, DefaultWait, Options{})
			r, err := k.Find(t.Context(), c.q)
			got := ""
			switch {
			case err != nil:
				e := mustCode(t, err, sandboxd.CodeConflict)
				if e.RetryAfter != 0 || e.Replay != nil || !strings.Contains(e.Message, "pay_7d5d…") {
					t.Errorf("conflict = %+v", e)
				}
				got = "conflict"
			case r != nil:
				got = r.By()
				if r.Payer() != payer {
					t.Errorf("payer %q", r.Payer())
				}
			}
			if got != c.want {
				t.Errorf("Find = %q (%v), want %q", got, err, c.want)
			}
			if f.count("lookup") != 1 || len(rec.lookups) != 1 || rec.lookups[0] != (len(c.rows) > 0) {
				t.Errorf("lookups: %d, observed %v", f.count("lookup"), rec.lookups)
			}
		})
	}
}

// TestFindUnavailable: a ledger that cannot be read is a 503, nothing else
// looked at; a caller gone is its context's error.
func TestFindUnavailable(t *testing.T) {
	f := newFakeStore()
	f.err = errors.New("connection refused")
	k, _ := mustKeeper(t, f, DefaultWait, Options{})
	_, err := k.Find(t.Context(), Query{Payer: payer, Key: nonce, Request: request})
	mustCode(t, err, sandboxd.CodeUnavailable)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := k.Find(ctx, Query{Payer: payer, Key: nonce}); !errors.Is(err, context.Canceled) {
		t.Errorf("a gone caller: %v", err)
	}
}

// TestRaced: the loser of a reservation race is answered the winner's
// answer when it asks the same request, refused with a 409 when its id
// names another, and left to the old refusal when nothing is kept.
func TestRaced(t *testing.T) {
	f := newFakeStore()
	f.put(row(StateRunning), nil)
	k, _ := mustKeeper(t, f, DefaultWait, Options{})
	e := mustCode(t, k.Raced(t.Context(), Query{Payer: payer, Key: other, ID: payID, Request: request}), sandboxd.CodeConflict)
	if e.Replay == nil || e.Replay.By() != sandboxd.ReplayByID {
		t.Errorf("same request: replay %v", e.Replay)
	}
	e = mustCode(t, k.Raced(t.Context(), Query{Payer: payer, Key: nonce, Request: request}), sandboxd.CodeConflict)
	if e.Replay == nil || e.Replay.By() != sandboxd.ReplayByPayment {
		t.Errorf("same payment: replay %v", e.Replay)
	}
	e = mustCode(t, k.Raced(t.Context(), Query{Payer: payer, Key: other, ID: payID, Request: another}), sandboxd.CodeConflict)
	if e.Replay != nil {
		t.Error("another request got a replay")
	}
	if err := k.Raced(t.Context(), Query{Payer: payer, Key: other, Request: request}); err != nil {
		t.Errorf("nothing kept: %v", err)
	}
}
