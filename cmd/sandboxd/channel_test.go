package main

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd/x402/channel"
	"sandboxd/x402/channel/channeltest"
	"sandboxd/x402/channel/payer"
)

// mustCall runs `sandboxd call` with the key against url and wants exit 0;
// it returns stdout.
func mustCall(tb testing.TB, key, url string, args ...string) string {
	tb.Helper()
	var stdout, stderr bytes.Buffer
	argv := append([]string{"--key-file", key, "--url", url + "/v1/code", "-c", "print(1)"}, args...)
	if code := callCommand(argv, &stdout, &stderr); code != 0 {
		tb.Fatalf("call %v: exit %d\n%s%s", args, code, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestCallPaysThroughChannel: offered a channel, `sandboxd call` deposits
// and pays the first call's voucher, then pays vouchers, and says so; the
// state file beside the key has mode 600.
func TestCallPaysThroughChannel(t *testing.T) {
	s := channeltest.NewSeller(t)
	key := mustPayerKey(t)
	out := mustCall(t, key, s.URL)
	if !strings.Contains(out, "through channel 0x") || !strings.Contains(out, "a deposit of 50000 and a voucher; running total 5000, balance 50000") {
		t.Fatalf("first call printed:\n%s", out)
	}
	out = mustCall(t, key, s.URL)
	if !strings.Contains(out, "amount 5000 atomic units") || !strings.Contains(out, "(a voucher; running total 10000, balance 50000)") ||
		!strings.Contains(out, "transaction none") {
		t.Fatalf("second call printed:\n%s", out)
	}
	if fi, err := os.Stat(payer.StatePath(key)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v, %v", fi, err)
	}
}

// TestCallChannelStateFileMode: a state file others may read is refused,
// saying how to fix it, and nothing is paid.
func TestCallChannelStateFileMode(t *testing.T) {
	s := channeltest.NewSeller(t)
	key := mustPayerKey(t)
	if err := os.WriteFile(payer.StatePath(key), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(payer.StatePath(key), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := callCommand([]string{"--key-file", key, "--url", s.URL + "/v1/code", "-c", "1"}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "chmod 600") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if s.Paid() != 0 {
		t.Fatalf("%d payments sent", s.Paid())
	}
}

// TestCallChannelConcurrentCallsSerialize: two calls with one key at once
// take turns on the state file's lock, so they sign consecutive vouchers
// (the deposit's 5000, then 10000) and the seller never has to correct
// either; without the lock both would deposit on a total of 0.
func TestCallChannelConcurrentCallsSerialize(t *testing.T) {
	s := channeltest.NewSeller(t)
	s.Set(func(k *channeltest.Knobs) { k.Delay = 100 * time.Millisecond })
	key := mustPayerKey(t)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mustCall(t, key, s.URL)
		}()
	}
	wg.Wait()
	var got []string
	for _, p := range s.Payments() {
		got = append(got, string(p.Kind)+" "+p.Voucher.MaxClaimableAmount.String())
	}
	if strings.Join(got, ", ") != "deposit 5000, voucher 10000" || s.Correctives() != 0 {
		t.Fatalf("payments %v, %d correctives", got, s.Correctives())
	}
}

// TestCallChannelFlags: a bad --scheme or --max-deposit is the operator's
// error (exit 2), before any request.
func TestCallChannelFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--scheme", "channel"}, {"--max-deposit", "-1"}, {"--max-deposit", "0.0000001"}, {"--max-deposit", "0"},
	} {
		var stdout, stderr bytes.Buffer
		if code := callCommand(append(args, "--key-file", "x", "-c", "1"), &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
}

// TestCallChannelMaxDeposit: --max-deposit under the price refuses the
// call unsigned; --scheme exact pays it exact instead.
func TestCallChannelMaxDeposit(t *testing.T) {
	s := channeltest.NewSeller(t)
	key := mustPayerKey(t)
	var stdout, stderr bytes.Buffer
	if code := callCommand([]string{"--key-file", key, "--url", s.URL + "/v1/code", "--max-deposit", "0.001", "-c", "1"},
		&stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "raise --max-deposit") || s.Paid() != 0 {
		t.Fatalf("exit %d, %d paid, stderr %q", code, s.Paid(), stderr.String())
	}
	if out := mustCall(t, key, s.URL, "--max-deposit", "0.001", "--scheme", "exact"); strings.Contains(out, "channel") {
		t.Fatalf("exact call printed:\n%s", out)
	}
}

// TestChannelShowAndRefund: channel show lists the channel with its
// totals (and nothing for another server); channel refund takes back the
// unspent balance and show then says refunded.
func TestChannelShowAndRefund(t *testing.T) {
	s := channeltest.NewSeller(t)
	key := mustPayerKey(t)
	mustCall(t, key, s.URL)
	mustCall(t, key, s.URL)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"channel", "show", "--key-file", key}, &stdout, &stderr); code != 0 {
		t.Fatalf("show: exit %d, %s", code, stderr.String())
	}
	line := strings.Fields(strings.Split(stdout.String(), "\n")[1])
	if len(line) != 9 || line[1] != s.URL || line[4] != "10000" || line[5] != "50000" || line[6] != "40000" || line[7] != payer.StateOpen {
		t.Fatalf("show printed:\n%s", stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"channel", "show", "--key-file", key, "--url", "http://elsewhere.test/v1/code"}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "no channels") {
		t.Fatalf("show elsewhere: exit %d\n%s", code, stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"channel", "refund", "--key-file", key, "--url", s.URL}, &stdout, &stderr); code != 0 ||
		!strings.HasPrefix(stdout.String(), "refunded: 40000 atomic units") {
		t.Fatalf("refund: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	ps := s.Payments()
	if last := ps[len(ps)-1]; last.Kind != channel.KindRefund || last.Voucher.MaxClaimableAmount.String() != "10000" {
		t.Fatalf("the refund sent %+v", last)
	}
	stdout.Reset()
	if code := run([]string{"channel", "show", "--key-file", key}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), payer.StateRefunded) {
		t.Fatalf("show after the refund: exit %d\n%s", code, stdout.String())
	}
	if code := run([]string{"channel", "refund", "--key-file", key}, &stdout, &stderr); code != 2 {
		t.Fatalf("refund without --url: exit %d", code)
	}
}
