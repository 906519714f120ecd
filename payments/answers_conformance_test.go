package payments

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
)

// testAnswer is the answer of a one-shot HTTP run with payment id id,
// kept for ten minutes.
func testAnswer(id string) *ledger.AnswerRow {
	return &ledger.AnswerRow{ID: id, Request: strings.Repeat("ab", 32), Kind: "run", Transport: "http",
		X402Version: 2, Flow: time.Minute, Keep: 10 * time.Minute}
}

// answered is ledgertest.Entry(i) claiming the answer a.
func answered(i int, a *ledger.AnswerRow) ledger.Entry {
	e := ledgertest.Entry(i)
	e.Answer = a
	return e
}

// mustDeliver settles the reserved entry e on l with an answer of body
// (status 200) and report.
func mustDeliver(tb testing.TB, l *ledger.SQL, e ledger.Entry, body []byte, report string) {
	tb.Helper()
	ctx := context.Background()
	if err := l.MarkSettling(ctx, e.Payer, e.Nonce, ledger.NewBody(200, body, 1<<20)); err != nil {
		tb.Fatal(err)
	}
	if err := l.MarkSettled(ctx, e.Payer, e.Nonce, "0xtx", "ok", []byte(report)); err != nil {
		tb.Fatal(err)
	}
}

// wantAnswer checks the state of (payer, key)'s live row on l ("" for
// none) and returns it.
func wantAnswer(tb testing.TB, l *ledger.SQL, payer, key, state string) ledger.AnswerMeta {
	tb.Helper()
	m, err := l.AnswerState(context.Background(), payer, key)
	switch {
	case state == "" && errors.Is(err, ledger.ErrNoAnswer):
		return m
	case err != nil:
		tb.Fatalf("AnswerState(%s) = %v, want %q", key, err, state)
	case m.State != state:
		tb.Fatalf("answer %s is %q, want %q", key, m.State, state)
	}
	return m
}

// TestAnswerConformanceExact: an exact payment's answer moves with its
// payments row (running, held with its bytes, ready with its report;
// pending; deleted when released or failed, freeing its id); a taken id
// reserves nothing; an answer over the cap keeps its size, not its bytes;
// entries without an answer behave as before.
func TestAnswerConformanceExact(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		l := ledgertest.Open(t, ledger.Config{Ledger: b.Location(t), Replica: "a"})
		payer, id := ledgertest.Entry(0).Payer, "pay_0123456789abcdef"
		e := answered(1, testAnswer(id))
		if err := l.Reserve(ctx, e); err != nil {
			t.Fatal(err)
		}
		got, err := l.LookupAnswer(ctx, payer, e.Nonce, id)
		if err != nil || got.ByKey == nil || got.ByID != got.ByKey || got.Payment != ledger.StatusReserved {
			t.Fatalf("LookupAnswer = %+v, %v; want the running row by key and id, payment reserved", got, err)
		}
		if m := got.ByKey; m.State != ledger.AnswerRunning || m.Payer != strings.ToLower(payer) ||
			m.Kind != "run" || m.Transport != "http" || m.X402Version != 2 || m.Replica != "a" {
			t.Fatalf("running row %+v", m)
		}
		// The id is the payer's: another payment of the payer cannot take
		// it, and then nothing is reserved; another payer can.
		if err := l.Reserve(ctx, answered(2, testAnswer(id))); !errors.Is(err, ledger.ErrAnswerTaken) {
			t.Fatalf("Reserve with a taken id = %v, want ledger.ErrAnswerTaken", err)
		}
		if _, err := l.Get(ctx, payer, ledgertest.Entry(2).Nonce); !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("the refused payment has a row: %v", err)
		}
		other := answered(2, testAnswer(id))
		other.Payer = "0x00000000000000000000000000000000000000cc"
		if err := l.Reserve(ctx, other); err != nil {
			t.Fatalf("another payer's id: %v", err)
		}
		if err := l.Reserve(ctx, answered(1, testAnswer("pay_other_id_000000"))); !errors.Is(err, ledger.ErrAlreadyUsed) {
			t.Fatalf("Reserve of a used payment = %v, want ledger.ErrAlreadyUsed", err)
		}

		mustDeliver(t, l, e, []byte(`{"stdout":"42\n"}`), `{"success":true}`)
		m, body, err := l.AnswerBody(ctx, payer, e.Nonce)
		if err != nil || m.State != ledger.AnswerReady || m.Status != 200 || string(body) != `{"stdout":"42\n"}` ||
			m.BodyBytes != int64(len(body)) || string(m.Settlement) != `{"success":true}` || !m.Expires.After(m.Created) {
			t.Fatalf("AnswerBody = %+v, %q, %v", m, body, err)
		}

		// Pending, then settled by the resolver: the pending report until
		// then, one built from the payments row after.
		p := answered(3, testAnswer(""))
		if err := l.Reserve(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := l.MarkSettling(ctx, p.Payer, p.Nonce, ledger.NewBody(201, []byte("{}"), 1<<20)); err != nil {
			t.Fatal(err)
		}
		if err := l.MarkPending(ctx, p.Payer, p.Nonce, "0xp", []byte(`{"pending":true}`)); err != nil {
			t.Fatal(err)
		}
		if m := wantAnswer(t, l, payer, p.Nonce, ledger.AnswerPending); string(m.Settlement) != `{"pending":true}` {
			t.Fatalf("pending row %+v", m)
		}
		if err := l.MarkSettled(ctx, p.Payer, p.Nonce, "0xp", "", nil); err != nil {
			t.Fatal(err)
		}
		if m := wantAnswer(t, l, payer, p.Nonce, ledger.AnswerReady); m.Settlement != nil || m.Status != 201 {
			t.Fatalf("row settled by the resolver %+v", m)
		}

		// Released and failed payments bought nothing: the row goes and
		// the id is free for another payment.
		for i, end := range []func(ledger.Entry) error{
			func(e ledger.Entry) error { return l.MarkReleased(ctx, e.Payer, e.Nonce) },
			func(e ledger.Entry) error {
				if err := l.MarkSettling(ctx, e.Payer, e.Nonce, ledger.NewBody(200, []byte("{}"), 1<<20)); err != nil {
					return err
				}
				return l.MarkFailed(ctx, e.Payer, e.Nonce, "", "invalid_signature")
			},
		} {
			e := answered(10+2*i, testAnswer("pay_freed_id_00000"))
			if err := l.Reserve(ctx, e); err != nil {
				t.Fatal(err)
			}
			if err := end(e); err != nil {
				t.Fatal(err)
			}
			wantAnswer(t, l, payer, e.Nonce, "")
			if err := l.Reserve(ctx, answered(11+2*i, testAnswer("pay_freed_id_00000"))); err != nil {
				t.Fatalf("case %d: the freed id: %v", i, err)
			}
			if err := l.MarkReleased(ctx, payer, ledgertest.Entry(11+2*i).Nonce); err != nil {
				t.Fatal(err)
			}
		}

		// Over the cap: the size and the settlement are kept, the bytes not.
		large := answered(20, testAnswer(""))
		if err := l.Reserve(ctx, large); err != nil {
			t.Fatal(err)
		}
		if err := l.MarkSettling(ctx, payer, large.Nonce, ledger.NewBody(200, bytes.Repeat([]byte("x"), 100), 10)); err != nil {
			t.Fatal(err)
		}
		m, body, err = l.AnswerBody(ctx, payer, large.Nonce)
		if err != nil || body != nil || m.Dropped != ledger.DroppedTooLarge || m.AnswerBytes != 100 || m.BodyBytes != 0 {
			t.Fatalf("too large: %+v, %q, %v", m, body, err)
		}

		// An answer the ledger would not store is the caller's bug.
		bad := answered(21, testAnswer(""))
		bad.Answer.Kind = "stream"
		var se *sandboxd.Error
		if err := l.Reserve(ctx, bad); !errors.As(err, &se) || se.Code != sandboxd.CodeInternal {
			t.Fatalf("Reserve of a bad answer = %v, want CodeInternal", err)
		}

		// Without an answer: no row, the moves as before.
		plain := ledgertest.Entry(30)
		if err := l.Reserve(ctx, plain); err != nil {
			t.Fatal(err)
		}
		if err := l.MarkSettling(ctx, plain.Payer, plain.Nonce, nil); err != nil {
			t.Fatal(err)
		}
		if err := l.MarkSettled(ctx, plain.Payer, plain.Nonce, "0xtx", "ok", nil); err != nil {
			t.Fatal(err)
		}
		ledgertest.WantStatus(t, l, plain, ledger.StatusSettled)
		if got, err := l.LookupAnswer(ctx, payer, plain.Nonce, ""); err != nil || got.ByKey != nil ||
			got.Payment != ledger.StatusSettled {
			t.Fatalf("LookupAnswer without an answer = %+v, %v", got, err)
		}
	})
}

// TestAnswerConformanceLiveness: a row past its expiry, or running under a
// replica whose lease ran out, is not found, gives its id back to the next
// reservation, and is deleted by the sweep; a live replica's row stays.
func TestAnswerConformanceLiveness(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		const lease = 2 * time.Second
		a, bb := ledgertest.TwoReplicas(t, b, ledger.Config{Lease: lease})
		payer := ledgertest.Entry(0).Payer

		short := testAnswer("pay_short_lived_0001")
		short.Flow, short.Keep = 0, time.Millisecond
		if err := a.Reserve(ctx, answered(1, short)); err != nil {
			t.Fatal(err)
		}
		if err := a.Reserve(ctx, answered(2, testAnswer("pay_silent_replica_1"))); err != nil {
			t.Fatal(err)
		}
		if err := bb.Reserve(ctx, answered(3, testAnswer("pay_live_replica_001"))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if got, err := bb.LookupAnswer(ctx, payer, ledgertest.Entry(1).Nonce, "pay_short_lived_0001"); err != nil ||
			got.ByKey != nil || got.ByID != nil || got.Payment != ledger.StatusReserved {
			t.Fatalf("an expired row: %+v, %v; want none (its payment reserved)", got, err)
		}
		if err := bb.Reserve(ctx, answered(4, testAnswer("pay_short_lived_0001"))); err != nil {
			t.Fatalf("an expired row's id: %v", err)
		}

		// a falls silent; b beats.
		wantAnswer(t, bb, payer, ledgertest.Entry(2).Nonce, ledger.AnswerRunning)
		time.Sleep(lease + 500*time.Millisecond)
		ledgertest.Beat(t, bb)
		wantAnswer(t, bb, payer, ledgertest.Entry(2).Nonce, "")
		rep, err := bb.SweepAnswers(ctx, 1<<30)
		if err != nil || rep.Expired != 1 || rep.Evicted != 0 {
			t.Fatalf("SweepAnswers = %+v, %v; want the silent replica's row deleted", rep, err)
		}
		if err := bb.Reserve(ctx, answered(5, testAnswer("pay_silent_replica_1"))); err != nil {
			t.Fatalf("a silent replica's id: %v", err)
		}
		wantAnswer(t, bb, payer, ledgertest.Entry(3).Nonce, ledger.AnswerRunning)
		wantAnswer(t, bb, payer, ledgertest.Entry(4).Nonce, ledger.AnswerRunning)
	})
}

// TestAnswerConformanceReserveOnce: 100 goroutines on two replicas reserve
// fresh payments of one payer with the same payment id at once: exactly one
// reserves (one payments row, one answers row), every other gets
// ledger.ErrAnswerTaken and reserves nothing.
func TestAnswerConformanceReserveOnce(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		a, other := ledgertest.TwoReplicas(t, b, ledger.Config{})
		ls := []*ledger.SQL{a, other}
		const id = "pay_raced_0000000000000"
		errs := make([]error, 100)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range errs {
			wg.Go(func() {
				<-start
				errs[i] = ls[i%2].Reserve(ctx, answered(100+i, testAnswer(id)))
			})
		}
		close(start)
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Fatalf("goroutines %d and %d both reserved id %s", won, i, id)
			case err == nil:
				won = i
			case !errors.Is(err, ledger.ErrAnswerTaken):
				t.Fatalf("goroutine %d: %v, want ledger.ErrAnswerTaken", i, err)
			}
		}
		if won < 0 {
			t.Fatal("no goroutine reserved")
		}
		rows, err := a.List(ctx, ledger.Filter{Payer: ledgertest.Entry(0).Payer})
		if err != nil || len(rows) != 1 || rows[0].Nonce != strings.ToLower(ledgertest.Entry(100+won).Nonce) {
			t.Fatalf("payments rows %+v, %v; want the winner's only", rows, err)
		}
		got, err := ls[1].LookupAnswer(ctx, ledgertest.Entry(0).Payer, ledgertest.Entry(100+(won+1)%100).Nonce, id)
		if err != nil || got.ByKey != nil || got.ByID == nil || got.ByID.Key != rows[0].Nonce || got.Payment != "" {
			t.Fatalf("a loser's lookup = %+v, %v; want the winner's row by id", got, err)
		}
	})
}

// TestAnswerConformanceChannel: a hold's answer is keyed by the channel's
// payer and its voucher, ready with the commit (its bytes and the report
// of the committed row), and deleted with a released or cleared hold; a
// hold whose id is taken holds nothing.
func TestAnswerConformanceChannel(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		l := ledgertest.Open(t, ledger.Config{Ledger: b.Location(t), Replica: "a"})
		c := mustAdopt(t, l, testChannel(t, 1))
		payer := ledgertest.Entry(0).Payer
		h := testHold("h1", 0, 1000, time.Minute)
		h.Answer = testAnswer("pay_voucher_000000001")
		if err := l.ReserveIncrement(ctx, c.ID, c.Charged, h); err != nil {
			t.Fatal(err)
		}
		vk := ledger.VoucherKey(c.ID, h.Max)
		wantAnswer(t, l, payer, vk, ledger.AnswerRunning)

		c2 := mustAdopt(t, l, testChannel(t, 2))
		h2 := testHold("h2", 0, 1000, time.Minute)
		h2.Answer = testAnswer("pay_voucher_000000001")
		if err := l.ReserveIncrement(ctx, c2.ID, c2.Charged, h2); !errors.Is(err, ledger.ErrAnswerTaken) {
			t.Fatalf("a hold with a taken id = %v, want ledger.ErrAnswerTaken", err)
		}
		if got := mustChannel(t, l, c2.ID); got.Hold != nil {
			t.Fatalf("the refused hold was taken: %+v", got.Hold)
		}

		commit := &ledger.AnswerCommit{Body: ledger.NewBody(200, []byte(`{"ok":1}`), 1<<20),
			Report: func(c ledger.Channel) ([]byte, error) { return fmt.Appendf(nil, `{"charged":"%s"}`, c.Charged), nil }}
		if _, err := l.CommitIncrement(ctx, c.ID, h.ID, c.Charged, "/v1/code", commit); err != nil {
			t.Fatal(err)
		}
		m, body, err := l.AnswerBody(ctx, payer, vk)
		if err != nil || m.State != ledger.AnswerReady || string(body) != `{"ok":1}` || string(m.Settlement) != `{"charged":"1000"}` {
			t.Fatalf("committed answer %+v, %q, %v", m, body, err)
		}
		wantCharged(t, l, c.ID, 1000, 1)

		// A report that fails rolls the commit back.
		h3 := testHold("h3", 1000, 1000, time.Minute)
		h3.Answer = testAnswer("")
		if err := l.ReserveIncrement(ctx, c.ID, big.NewInt(1000), h3); err != nil {
			t.Fatal(err)
		}
		bad := &ledger.AnswerCommit{Body: commit.Body, Report: func(ledger.Channel) ([]byte, error) { return nil, errors.New("no") }}
		if _, err := l.CommitIncrement(ctx, c.ID, h3.ID, big.NewInt(1000), "/v1/code", bad); err == nil {
			t.Fatal("a commit whose report failed succeeded")
		}
		wantCharged(t, l, c.ID, 1000, 1)

		// Released and cleared holds bought nothing.
		if err := l.ReleaseIncrement(ctx, c.ID, h3.ID); err != nil {
			t.Fatal(err)
		}
		wantAnswer(t, l, payer, ledger.VoucherKey(c.ID, h3.Max), "")
		h2.Answer = testAnswer("pay_voucher_000000002")
		if err := l.ReserveIncrement(ctx, c2.ID, c2.Charged, h2); err != nil {
			t.Fatal(err)
		}
		if n, err := l.ClearHolds(ctx); err != nil || n != 1 {
			t.Fatalf("ClearHolds = %d, %v", n, err)
		}
		wantAnswer(t, l, payer, ledger.VoucherKey(c2.ID, h2.Max), "")
		wantAnswer(t, l, payer, vk, ledger.AnswerReady)
	})
}

// TestAnswerConformanceBudget: over the byte budget, the sweep drops the
// bytes of the biggest payer's oldest answers until the rest is under 90 %
// of it, keeping the rows; another payer's answer is kept. Two replicas
// sweeping at once evict no more than one pass would.
func TestAnswerConformanceBudget(t *testing.T) {
	ledgertest.ForEach(t, func(t *testing.T, b ledgertest.Backend) {
		ctx := context.Background()
		clock := ledgertest.NewClock(time.Now())
		a, bb := ledgertest.TwoReplicas(t, b, ledger.Config{Now: clock.Now})
		hundred := bytes.Repeat([]byte("x"), 100)
		for i := range 10 {
			e := answered(i, testAnswer(""))
			if err := a.Reserve(ctx, e); err != nil {
				t.Fatal(err)
			}
			mustDeliver(t, a, e, hundred, "{}")
			clock.Add(time.Second)
		}
		y := answered(50, testAnswer(""))
		y.Payer = "0x00000000000000000000000000000000000000cc"
		if err := a.Reserve(ctx, y); err != nil {
			t.Fatal(err)
		}
		mustDeliver(t, a, y, hundred, "{}")

		reps := make([]ledger.SweepReport, 2)
		var wg sync.WaitGroup
		for i, l := range []*ledger.SQL{a, bb} {
			wg.Go(func() {
				var err error
				if reps[i], err = l.SweepAnswers(ctx, 1000); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n, sum := reps[0].Evicted+reps[1].Evicted, reps[0].EvictedBytes+reps[1].EvictedBytes; n != 2 || sum != 200 ||
			max(reps[0].Bytes, reps[1].Bytes) != 900 {
			t.Fatalf("sweeps %+v; want 2 rows (200 bytes) evicted in all, 900 kept", reps)
		}
		for i := range 10 {
			m, body, err := a.AnswerBody(ctx, ledgertest.Entry(0).Payer, ledgertest.Entry(i).Nonce)
			evicted := i < 2
			if err != nil || (body == nil) != evicted || (m.Dropped == ledger.DroppedEvicted) != evicted ||
				m.State != ledger.AnswerReady || m.AnswerBytes != 100 {
				t.Fatalf("row %d: %+v, %d bytes, %v; evicted %v", i, m, len(body), err, evicted)
			}
		}
		if _, body, err := a.AnswerBody(ctx, y.Payer, y.Nonce); err != nil || len(body) != 100 {
			t.Fatalf("the other payer's answer: %d bytes, %v", len(body), err)
		}
	})
}
