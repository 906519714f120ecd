package main

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/internal/pgtest"
	"sandboxd/payments/ledger"
	"sandboxd/x402/channel"
)

// seedChannelsAt is the clock of seedChannels' stamps.
var seedChannelsAt = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// mustAdoptChannel stores a channel of payer (salted by salt) in state,
// holding balance on the escrow, and returns its id.
func mustAdoptChannel(t *testing.T, l *ledger.SQL, payer string, salt int64, state string, balance int64) string {
	t.Helper()
	addr := common.HexToAddress
	cfg := channel.Config{Payer: addr(payer), PayerAuthorizer: addr(payer), Receiver: addr("0xc3"),
		ReceiverAuthorizer: addr("0xd4"), Token: addr("0x036CbD53842c5426634e7929541eC2318f3dCF7e"),
		WithdrawDelay: channel.MinWithdrawDelay, Salt: common.BigToHash(big.NewInt(salt))}
	id, err := channel.ID(cfg, big.NewInt(84532))
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.AdoptChannel(context.Background(), ledger.Channel{ID: id.Hex(), Network: "eip155:84532", Config: cfg,
		State: state, Balance: big.NewInt(balance)})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// mustChargeChannel charges channel id amount more, as a delivered call
// does (a hold, then its commit).
func mustChargeChannel(t *testing.T, l *ledger.SQL, id string, amount int64, now time.Time) {
	t.Helper()
	ctx := context.Background()
	c, err := l.Channel(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	max := new(big.Int).Add(c.Charged, big.NewInt(amount))
	h := ledger.Hold{ID: "call-" + max.String(), Amount: big.NewInt(amount), Max: max, Sig: []byte{0xAB, 0xCD},
		Until: now.Add(time.Minute)}
	if err := l.ReserveIncrement(ctx, id, c.Charged, h); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CommitIncrement(ctx, id, h.ID, c.Charged, "https://sandboxd.test/v1/code", nil); err != nil {
		t.Fatal(err)
	}
}

// seedChannels writes two channels to the ledger at location: alice's,
// open, charged twice 5000 of which 5000 was claimed, a withdrawal of
// 200000 begun; bob's, closed, never charged.
func seedChannels(t *testing.T, location string) {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, ledger.Config{Ledger: location, Replica: "host-a/default",
		Now: func() time.Time { return seedChannelsAt }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	alice := mustAdoptChannel(t, l, "0x00000000000000000000000000000000000000a1", 1, ledger.ChannelOpen, 1_000_000)
	mustChargeChannel(t, l, alice, 5000, seedChannelsAt)
	mustChargeChannel(t, l, alice, 5000, seedChannelsAt)
	if _, err := l.UpdateMirror(ctx, alice, ledger.Mirror{Balance: big.NewInt(1_000_000), Claimed: big.NewInt(5000),
		WithdrawAmount: big.NewInt(200_000), WithdrawAt: seedChannelsAt.Add(-time.Hour).Unix(), RefundNonce: new(big.Int)}); err != nil {
		t.Fatal(err)
	}
	mustAdoptChannel(t, l, "0x00000000000000000000000000000000000000b2", 2, ledger.ChannelClosed, 0)
}

// TestLedgerChannelsCommand: `sandboxd ledger channels` prints each
// channel's id (10 characters), payer, state, amounts in atomic units
// (unclaimed = charged - claimed), withdrawal, calls and last charge, and
// filters by payer (any case), state and count, on either backend.
func TestLedgerChannelsCommand(t *testing.T) {
	forEachLedger(t, seedChannels, "", func(t *testing.T, cfg string) {
		rows := func(args ...string) [][]string {
			t.Helper()
			out := mustRunLedger(t, cfg, append([]string{"channels"}, args...)...)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if !strings.HasPrefix(lines[0], "CHANNEL") {
				t.Fatalf("no header:\n%s", out)
			}
			var fields [][]string
			for _, l := range lines[1:] {
				fields = append(fields, strings.Fields(l))
			}
			return fields
		}
		all := rows()
		if len(all) != 2 {
			t.Fatalf("%d rows, want 2: %q", len(all), all)
		}
		alice := []string{"0x00000000000000000000000000000000000000a1", "open", "1000000", "10000", "5000", "5000",
			"200000@2026-11-30T11:00:00Z", "2", "2026-11-30T12:00:00Z"}
		bob := []string{"0x00000000000000000000000000000000000000b2", "closed", "0", "0", "0", "0", "-", "0", "-"}
		for _, want := range [][]string{alice, bob} {
			i := slices.IndexFunc(all, func(r []string) bool { return len(r) == 10 && r[1] == want[0] })
			if i < 0 || !slices.Equal(all[i][1:], want) || len(all[i][0]) != 10 || !strings.HasPrefix(all[i][0], "0x") {
				t.Errorf("no row %q in %q", want, all)
			}
		}
		for _, tc := range []struct {
			args  []string
			payer string
			n     int
		}{
			{[]string{"--payer", "0x00000000000000000000000000000000000000B2"}, bob[0], 1},
			{[]string{"--state", "open"}, alice[0], 1},
			{[]string{"--state", "refunding"}, "", 0},
			{[]string{"--limit", "1"}, "", 1},
		} {
			got := rows(tc.args...)
			if len(got) != tc.n || (tc.payer != "" && got[0][1] != tc.payer) {
				t.Errorf("channels %v: %q, want %d rows of %s", tc.args, got, tc.n, tc.payer)
			}
		}
	})
}

// TestLedgerListCommandErrors: a state that is not one of the listed
// kind's is a usage error, a missing ledger file an error, for channels
// and answers.
func TestLedgerListCommandErrors(t *testing.T) {
	cfg := writeConfig(t, fmt.Sprintf("payments:\n  ledger: %q\n", filepath.Join(t.TempDir(), "none.db")))
	for _, what := range []string{"channels", "answers"} {
		var out, errb bytes.Buffer
		if code := run([]string{"ledger", what, "--state", "settled", "--config", cfg}, &out, &errb); code != 2 {
			t.Fatalf("%s, bad --state: exit %d %s", what, code, errb.String())
		}
		errb.Reset()
		if code := run([]string{"ledger", what, "--config", cfg}, &out, &errb); code != 1 ||
			!strings.Contains(errb.String(), "no ledger file") {
			t.Fatalf("%s, missing file: exit %d %s", what, code, errb.String())
		}
	}
}

// forEachLedger runs test on a ledger of each backend, SQLite and
// PostgreSQL, seeded by seed, given the configuration file naming it (its
// payments section followed by the lines of extra).
func forEachLedger(t *testing.T, seed func(*testing.T, string), extra string, test func(t *testing.T, cfg string)) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			location := filepath.Join(t.TempDir(), "ledger.db")
			if backend == "postgres" {
				location = pgtest.NewDatabase(t)
			}
			seed(t, location)
			test(t, writeConfig(t, fmt.Sprintf("payments:\n  ledger: %q\n%s", location, extra)))
		})
	}
}

// mustRunLedger runs `sandboxd ledger` with args on the configuration
// file cfg, and returns what it printed.
func mustRunLedger(t *testing.T, cfg string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append([]string{"ledger"}, append(args, "--config", cfg)...), &out, &errb); code != 0 {
		t.Fatalf("ledger %v: exit %d: %s", args, code, errb.String())
	}
	return out.String()
}
