package main

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"sandboxd"
	"sandboxd/payments/ledger"
	"sandboxd/payments/retries"
)

// TestLedgerAnswersStore: the adapter hands the keeper the ledger's rows
// field for field (one pointer when one row holds the key and the id),
// its stored report decoded, a report built from the payments row when
// none was stored (settled by recovery), and the ledger's ErrNoAnswer as
// retries.ErrNoAnswer.
func TestLedgerAnswersStore(t *testing.T) {
	ctx := context.Background()
	l, err := ledger.Open(ctx, ledger.Config{Ledger: filepath.Join(t.TempDir(), "ledger.db"), Replica: "a"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s := ledgerAnswers{l}
	id := "pay_00000000000000000000000000000001"
	e := mustReserveAnswer(t, l, answersAlice, 1, id)
	got, err := s.LookupAnswer(ctx, e.Payer, e.Nonce, id)
	if err != nil || got.ByKey == nil || got.ByID != got.ByKey || got.Payment != ledger.StatusReserved ||
		got.ByKey.State != retries.StateRunning || got.ByKey.Kind != sandboxd.AnswerRun ||
		got.ByKey.Transport != sandboxd.TransportHTTP || got.ByKey.Settlement != nil {
		t.Fatalf("LookupAnswer = %+v, %v", got, err)
	}
	report := `{"Version":2,"Success":true,"Transaction":"0xabc","Network":"eip155:84532","Payer":"` + answersAlice + `"}`
	if err := l.MarkSettling(ctx, e.Payer, e.Nonce, ledger.NewBody(200, []byte("{}\n"), 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := l.MarkSettled(ctx, e.Payer, e.Nonce, "0xabc", "ok", []byte(report)); err != nil {
		t.Fatal(err)
	}
	m, body, err := s.AnswerBody(ctx, e.Payer, e.Nonce)
	if err != nil || string(body) != "{}\n" || m.State != retries.StateReady || m.Status != 200 || m.BodyBytes != 3 ||
		m.Settlement == nil || m.Settlement.Transaction != "0xabc" || !m.Settlement.Success {
		t.Fatalf("AnswerBody = %+v %q, %v", m, body, err)
	}

	// Settled by recovery: no report stored, one built from the payments row.
	r := mustReserveAnswer(t, l, answersAlice, 2, "")
	if err := l.MarkSettling(ctx, r.Payer, r.Nonce, ledger.NewBody(200, []byte("{}\n"), 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := l.MarkSettled(ctx, r.Payer, r.Nonce, "0xdef", "ok", nil); err != nil {
		t.Fatal(err)
	}
	m, err = s.AnswerState(ctx, r.Payer, r.Nonce)
	if err != nil || !reflect.DeepEqual(m.Settlement, &sandboxd.Settlement{Version: 2, Success: true,
		Transaction: "0xdef", Network: "eip155:84532", Payer: answersAlice}) {
		t.Fatalf("AnswerState of a recovered row = %+v, %v", m.Settlement, err)
	}

	if _, err := s.AnswerState(ctx, answersBob, "0x01"); !errors.Is(err, retries.ErrNoAnswer) {
		t.Fatalf("AnswerState of no row = %v, want retries.ErrNoAnswer", err)
	}
	if _, _, err := s.AnswerBody(ctx, answersBob, "0x01"); !errors.Is(err, retries.ErrNoAnswer) {
		t.Fatalf("AnswerBody of no row = %v, want retries.ErrNoAnswer", err)
	}
	if rep, err := s.SweepAnswers(ctx, 1<<20); err != nil || rep.Bytes != 6 {
		t.Fatalf("SweepAnswers = %+v, %v; want 6 bytes kept", rep, err)
	}
}
