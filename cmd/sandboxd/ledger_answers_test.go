package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sandboxd/payments/ledger"
)

// The payers of seedAnswers.
const (
	answersAlice = "0x00000000000000000000000000000000000000a1"
	answersBob   = "0x00000000000000000000000000000000000000b2"
)

// mustReserveAnswer reserves payment i of payer with an answer of id
// claimed with it, and returns its entry.
func mustReserveAnswer(t *testing.T, l *ledger.SQL, payer string, i int, id string) ledger.Entry {
	t.Helper()
	e := ledger.Entry{Payer: payer, Nonce: fmt.Sprintf("0x%064x", i), Amount: "5000", Network: "eip155:84532",
		Asset: "0x036cbd53842c5426634e7929541ec2318f3dcf7e",
		Answer: &ledger.AnswerRow{ID: id, Request: strings.Repeat("ab", 32), Kind: "run", Transport: "http",
			X402Version: 2, Flow: time.Hour, Keep: time.Hour}}
	if err := l.Reserve(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return e
}

// seedAnswers writes three answers to the ledger at location: alice's two,
// ready, one of 1000 bytes kept and one of 5000 over a 4000-byte cap; bob's
// one, still running.
func seedAnswers(t *testing.T, location string) {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, ledger.Config{Ledger: location, Replica: "host-a/default"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i, size := range []int{1000, 5000} {
		e := mustReserveAnswer(t, l, answersAlice, i+1, fmt.Sprintf("pay_%032d", i))
		if err := l.MarkSettling(ctx, e.Payer, e.Nonce, ledger.NewBody(200, make([]byte, size), 4000)); err != nil {
			t.Fatal(err)
		}
		if err := l.MarkSettled(ctx, e.Payer, e.Nonce, "0xtx", "ok", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	mustReserveAnswer(t, l, answersBob, 3, "")
}

// TestLedgerAnswersCommand: `sandboxd ledger answers` sums the answers by
// state (count, bytes kept, sizes, too large) with their total against
// payments.retries.max_bytes, then lists them (payer, key and id cut
// short, state, sizes), filtered by payer (any case), state and count; on
// either backend.
func TestLedgerAnswersCommand(t *testing.T) {
	forEachLedger(t, seedAnswers, "  retries:\n    max_bytes: 32MiB\n", func(t *testing.T, cfg string) {
		answers := func(args ...string) string {
			t.Helper()
			return mustRunLedger(t, cfg, append([]string{"answers"}, args...)...)
		}
		all := answers()
		for _, want := range []string{"running  1        0           0             0          0        0",
			"ready    2        1000        6000          1          0        0",
			"total    3        1000        6000          1          0        0",
			"kept bytes: 1000 of payments.retries.max_bytes 33554432 (0.0%)"} {
			if !strings.Contains(all, want) {
				t.Errorf("no %q in:\n%s", want, all)
			}
		}
		if n := strings.Count(all, answersAlice); n != 2 || !strings.Contains(all, "pay_0000 ") ||
			!strings.Contains(all, "0x00000000 ") || !strings.Contains(all, "too_large") {
			t.Errorf("alice's rows (%d) not listed with a short key and id:\n%s", n, all)
		}
		for _, tc := range []struct {
			args []string
			want int
		}{
			{[]string{"--payer", strings.ToUpper(answersBob[2:])}, 0},
			{[]string{"--payer", "0x00000000000000000000000000000000000000B2"}, 1},
			{[]string{"--state", "ready"}, 2},
			{[]string{"--state", "pending"}, 0},
			{[]string{"--limit", "1"}, 1},
			{[]string{"--summary"}, 0},
		} {
			out := answers(tc.args...)
			rows := strings.Count(out, "  run  ")
			if rows != tc.want || !strings.Contains(out, "total    3") {
				t.Errorf("answers %v: %d rows, want %d:\n%s", tc.args, rows, tc.want, out)
			}
		}
	})
}
