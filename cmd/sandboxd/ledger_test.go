package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandboxd/internal/pgtest"
	"sandboxd/payments/ledger"
)

// seedLedger writes three payments to the ledger at location: one settled
// (with its transaction), one failed, one reserved by another payer.
func seedLedger(t *testing.T, location string) {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, ledger.Config{Ledger: location, Replica: "host-a/default",
		Now: func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	entry := func(payer string, i int) ledger.Entry {
		return ledger.Entry{Payer: payer, Nonce: fmt.Sprintf("0x%064x", i), Amount: "5000", Network: "eip155:84532", Asset: "0xa"}
	}
	alice, bob := "0x00000000000000000000000000000000000000a1", "0x00000000000000000000000000000000000000b2"
	steps := []func() error{
		func() error { return l.Reserve(ctx, entry(alice, 1)) },
		func() error { return l.MarkSettling(ctx, alice, entry(alice, 1).Nonce, nil) },
		func() error { return l.MarkSettled(ctx, alice, entry(alice, 1).Nonce, "0xfeed", "ok", nil) },
		func() error { return l.Reserve(ctx, entry(alice, 2)) },
		func() error { return l.MarkSettling(ctx, alice, entry(alice, 2).Nonce, nil) },
		func() error { return l.MarkFailed(ctx, alice, entry(alice, 2).Nonce, "", "invalid_transaction_state") },
		func() error { return l.Reserve(ctx, entry(bob, 3)) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLedgerCommand: `sandboxd ledger stats` and `ledger list` with its
// filters read the configured ledger, SQLite or PostgreSQL.
func TestLedgerCommand(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			location := filepath.Join(t.TempDir(), "ledger.db")
			if backend == "postgres" {
				location = pgtest.NewDatabase(t)
			}
			seedLedger(t, location)
			cfg := writeConfig(t, fmt.Sprintf("payments:\n  ledger: %q\n", location))
			ledger := func(args ...string) string {
				t.Helper()
				var out, errb bytes.Buffer
				if code := run(append([]string{"ledger"}, append(args, "--config", cfg)...), &out, &errb); code != 0 {
					t.Fatalf("ledger %v: exit %d: %s", args, code, errb.String())
				}
				return out.String()
			}
			stats := ledger("stats")
			for _, want := range []string{"2026-11-30  failed    1      5000", "2026-11-30  reserved  1      5000", "2026-11-30  settled   1      5000"} {
				if !strings.Contains(stats, want) {
					t.Errorf("stats lack %q:\n%s", want, stats)
				}
			}
			for _, tc := range []struct {
				args []string
				rows int
				want string
			}{
				{nil, 3, ""},
				{[]string{"--state", "settled"}, 1, "0xfeed"},
				{[]string{"--payer", "0x00000000000000000000000000000000000000B2"}, 1, "host-a/default"},
				{[]string{"--since", "2026-12-01"}, 0, ""},
				{[]string{"--since", "2026-11-30T11:00:00Z", "--state", "failed"}, 1, "invalid_transaction_state"},
			} {
				out := ledger(append([]string{"list"}, tc.args...)...)
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if len(lines)-1 != tc.rows || !strings.Contains(out, tc.want) {
					t.Errorf("list %v: %d rows, want %d with %q:\n%s", tc.args, len(lines)-1, tc.rows, tc.want, out)
				}
			}
		})
	}
}

// TestLedgerCommandErrors: a missing file and a bad --since are errors,
// and a URL's password never shows.
func TestLedgerCommandErrors(t *testing.T) {
	var out, errb bytes.Buffer
	cfg := writeConfig(t, fmt.Sprintf("payments:\n  ledger: %q\n", filepath.Join(t.TempDir(), "none.db")))
	if code := run([]string{"ledger", "stats", "--config", cfg}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no ledger file") {
		t.Fatalf("missing file: exit %d %s", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"ledger", "list", "--since", "yesterday", "--config", cfg}, &out, &errb); code != 2 {
		t.Fatalf("bad --since: exit %d %s", code, errb.String())
	}
	if code := run([]string{"ledger", "list", "--state", "paid", "--config", cfg}, &out, &errb); code != 2 {
		t.Fatalf("bad --state: exit %d %s", code, errb.String())
	}
	errb.Reset()
	cfg = writeConfig(t, "payments:\n  ledger: \"postgres://u:sekrit@127.0.0.1:1/db?connect_timeout=2\"\n")
	if code := run([]string{"ledger", "stats", "--config", cfg}, &out, &errb); code != 1 || strings.Contains(errb.String(), "sekrit") {
		t.Fatalf("unreachable database: exit %d %s", code, errb.String())
	}
	// A password in the query is no less secret.
	errb.Reset()
	cfg = writeConfig(t, "payments:\n  ledger: \"postgres://127.0.0.1:1/db?connect_timeout=2&password=hunter2&sslpassword=s3cret\"\n")
	if code := run([]string{"ledger", "stats", "--config", cfg}, &out, &errb); code != 1 ||
		strings.Contains(errb.String(), "hunter2") || strings.Contains(errb.String(), "s3cret") {
		t.Fatalf("unreachable database, password in the query: exit %d %s", code, errb.String())
	}
}

// TestLedgerListPrintsNoTerminalControls: a transaction hash and a reason
// that came from a hostile facilitator are listed with their control
// characters escaped, one row per line.
func TestLedgerListPrintsNoTerminalControls(t *testing.T) {
	location := filepath.Join(t.TempDir(), "ledger.db")
	ctx := context.Background()
	l, err := ledger.Open(ctx, ledger.Config{Ledger: location, Replica: "host-a/default"})
	if err != nil {
		t.Fatal(err)
	}
	payer, nonce := "0x00000000000000000000000000000000000000a1", fmt.Sprintf("0x%064x", 1)
	for _, step := range []func() error{
		func() error {
			return l.Reserve(ctx, ledger.Entry{Payer: payer, Nonce: nonce, Amount: "5000", Network: "eip155:84532", Asset: "0xa"})
		},
		func() error { return l.MarkSettling(ctx, payer, nonce, nil) },
		func() error { return l.MarkFailed(ctx, payer, nonce, "0x\x1b]0;owned\x07", "bad\x1b[2J\nforged row") },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	var out, errb bytes.Buffer
	cfg := writeConfig(t, fmt.Sprintf("payments:\n  ledger: %q\n", location))
	if code := run([]string{"ledger", "list", "--config", cfg}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if strings.ContainsAny(out.String(), "\x1b\x07") || strings.Count(strings.TrimSpace(out.String()), "\n") != 1 {
		t.Fatalf("list %q: want one row, controls escaped", out.String())
	}
}
