package main

import (
	"bytes"
	"strings"
	"testing"

	"sandboxd/x402/channel/channeltest"
)

// TestCallResendsLostAnswer: the answer to the paid request is lost once;
// `sandboxd call` sends the same payment again, says so, and says the
// answer was replayed, paid once.
func TestCallResendsLostAnswer(t *testing.T) {
	s := channeltest.NewSeller(t)
	s.Set(func(k *channeltest.Knobs) { k.Drop, k.Replay, k.PaymentID = 1, true, true })
	key := mustPayerKey(t)
	var stdout, stderr bytes.Buffer
	argv := []string{"--key-file", key, "--url", s.URL + "/v1/code", "-c", "print(1)", "--payment-id", "sdx_0123456789abcdef"}
	if code := callCommand(argv, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"the answer was lost", "asking again with the same payment", "(1 of 3)",
		"note: answer replayed: paid once"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	}
	h := s.Headers()
	if len(h) != 2 || h[0] != h[1] || channeltest.PaymentID(h[0]) != "sdx_0123456789abcdef" {
		t.Fatalf("%d payments sent: want the same one twice, with the id given", len(h))
	}
	if !strings.Contains(stdout.String(), "running total 5000") {
		t.Fatalf("stdout:\n%s", stdout.String())
	}
}

// TestCallNoRetries: with --retries 0 a lost answer fails the call, which
// prints the payment id to fetch it with.
func TestCallNoRetries(t *testing.T) {
	s := channeltest.NewSeller(t)
	s.Set(func(k *channeltest.Knobs) { k.Drop, k.PaymentID = 1, true })
	key := mustPayerKey(t)
	var stdout, stderr bytes.Buffer
	if code := callCommand([]string{"--key-file", key, "--url", s.URL + "/v1/code", "-c", "1", "--retries", "0"},
		&stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr.String())
	}
	id := channeltest.PaymentID(s.Headers()[0])
	if s.Paid() != 1 || id == "" || !strings.Contains(stderr.String(), "--payment-id "+id) {
		t.Fatalf("%d payments, id %q; stderr:\n%s", s.Paid(), id, stderr.String())
	}
}

// TestCallResendFlags: --retries out of its bounds and a malformed
// --payment-id are the operator's errors (exit 2), before anything is
// sent.
func TestCallResendFlags(t *testing.T) {
	key := mustPayerKey(t)
	for _, args := range [][]string{{"--retries", "-1"}, {"--retries", "11"}, {"--payment-id", "short"},
		{"--payment-id", "sdx_0123456789abcdef/"}} {
		var stdout, stderr bytes.Buffer
		argv := append([]string{"--key-file", key, "--url", "http://127.0.0.1:1/v1/code", "-c", "1"}, args...)
		if code := callCommand(argv, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), args[0]) {
			t.Errorf("%v: exit %d, want 2 naming the flag\n%s", args, code, stderr.String())
		}
	}
}
