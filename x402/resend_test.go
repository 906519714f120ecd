package x402_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// paidServer answers the paid requests it is sent with answer(n, r), n
// counting from 0; answer returns the status and headers to write, or
// drop to close the connection once the request was read. It keeps the
// payment headers it got.
type paidServer struct {
	*httptest.Server
	mu      sync.Mutex
	headers []string
}

// drop is the status with which an answer closes the connection instead.
const drop = -1

func newPaidServer(tb testing.TB, terms x402.PaymentRequired, answer func(n int, h http.Header) int) *paidServer {
	tb.Helper()
	s := &paidServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		value := r.Header.Get(x402.HeaderPaymentSignature)
		if value == "" {
			v, _ := x402.EncodeHeader(terms)
			w.Header().Set(x402.HeaderPaymentRequired, v)
			w.WriteHeader(http.StatusPaymentRequired)
			return
		}
		s.mu.Lock()
		n := len(s.headers)
		s.headers = append(s.headers, value)
		s.mu.Unlock()
		status := answer(n, w.Header())
		if status == drop {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				tb.Error(err)
				return
			}
			_ = conn.Close()
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"stdout":"42\n"}`))
	}))
	tb.Cleanup(s.Close)
	return s
}

// sent are the payment headers the server got.
func (s *paidServer) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.headers...)
}

// declaring is exact terms of x402test's requirements that declare the
// payment-identifier extension.
func declaring(tb testing.TB) x402.PaymentRequired {
	return x402.PaymentRequired{X402Version: 2, Resource: x402.NewResource("http://seller.test/v1/code", "a run"),
		Accepts:    []x402.Requirements{x402test.Requirements(tb)},
		Extensions: map[string]any{x402.ExtensionPaymentIdentifier: x402.PaymentIdentifierDeclaration()}}
}

// payResend pays s's terms with r (a millisecond's backoff) and returns
// the answer, the notes and the error.
func payResend(t *testing.T, s *paidServer, r x402.Resend) (*x402.PaidResponse, []string, error) {
	t.Helper()
	var notes []string
	r.Backoff, r.Note = time.Millisecond, func(n string) { notes = append(notes, n) }
	policy := x402.DefaultPayPolicy()
	policy.Networks, policy.Assets = []string{x402test.Requirements(t).Network}, []string{x402test.Requirements(t).Asset}
	policy.Resend = r
	resp, err := x402.Pay(context.Background(), s.Client(), x402test.Key(t), s.URL, []byte(`{}`), policy)
	return resp, notes, err
}

// idOf is the payment id a payment header carries.
func idOf(t *testing.T, value string) string {
	t.Helper()
	p, err := x402.DecodePayment(value, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := x402.ParsePaymentID(p.Extensions)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestResendLostAnswer: the answer to the paid request is lost (the
// connection closed after the request was read); the very same payment
// header, with its payment id, is sent again and its replay taken.
func TestResendLostAnswer(t *testing.T) {
	s := newPaidServer(t, declaring(t), func(n int, h http.Header) int {
		if n == 0 {
			return drop
		}
		h.Set(x402.HeaderIdempotentReplayed, "true")
		return http.StatusOK
	})
	id := x402.NewPaymentID()
	resp, notes, err := payResend(t, s, x402.Resend{PaymentID: id, Retries: 3})
	if err != nil || resp.StatusCode != http.StatusOK || !resp.Replayed || resp.Resent != 1 {
		t.Fatalf("answer %+v, %v", resp, err)
	}
	sent := s.sent()
	if len(sent) != 2 || sent[0] != sent[1] || idOf(t, sent[0]) != id {
		t.Fatalf("sent %d payments, equal %v, id %q: want the same one twice, with id %s", len(sent), sent[0] == sent[len(sent)-1], idOf(t, sent[0]), id)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "the answer was lost") || !strings.Contains(notes[0], "(1 of 3)") {
		t.Fatalf("notes %q", notes)
	}
}

// TestResendNoIDUndeclared: terms that do not declare payment-identifier
// get no id; the payment is resent all the same.
func TestResendNoIDUndeclared(t *testing.T) {
	terms := declaring(t)
	terms.Extensions = map[string]any{}
	s := newPaidServer(t, terms, func(n int, _ http.Header) int { return map[bool]int{true: drop, false: 200}[n == 0] })
	resp, _, err := payResend(t, s, x402.Resend{PaymentID: x402.NewPaymentID(), Retries: 1})
	if err != nil || resp.StatusCode != http.StatusOK || resp.Replayed {
		t.Fatalf("answer %+v, %v", resp, err)
	}
	if sent := s.sent(); len(sent) != 2 || sent[0] != sent[1] || idOf(t, sent[0]) != "" {
		t.Fatalf("sent %d payments: want the same one twice, without an id", len(sent))
	}
}

// TestResendZeroRetries: with no retries the lost answer is an error, the
// payment was sent once, and the note gives the payment id to ask again
// with.
func TestResendZeroRetries(t *testing.T) {
	s := newPaidServer(t, declaring(t), func(int, http.Header) int { return drop })
	id := x402.NewPaymentID()
	_, notes, err := payResend(t, s, x402.Resend{PaymentID: id})
	if err == nil || !errors.Is(err, io.EOF) {
		t.Fatalf("err %v, want the lost answer's EOF", err)
	}
	if n := len(s.sent()); n != 1 {
		t.Fatalf("sent %d payments, want 1", n)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "--payment-id "+id) {
		t.Fatalf("notes %q: want the payment id to ask again with", notes)
	}
}

// TestResendBounded: answers lost every time are asked for Retries times
// again, no more, with the backoff doubling.
func TestResendBounded(t *testing.T) {
	s := newPaidServer(t, declaring(t), func(int, http.Header) int { return drop })
	_, notes, err := payResend(t, s, x402.Resend{PaymentID: x402.NewPaymentID(), Retries: 3})
	if err == nil {
		t.Fatal("no error after every answer was lost")
	}
	if n := len(s.sent()); n != 4 {
		t.Fatalf("sent %d payments, want 1 + 3", n)
	}
	if len(notes) != 4 || !strings.Contains(notes[2], "in 4ms (3 of 3)") || !strings.Contains(notes[3], "3 of 3 resends made") {
		t.Fatalf("notes %q", notes)
	}
}

// TestResendStatuses: which answers are asked for again (once here), and
// which are the last: a refusal is never sent again blindly.
func TestResendStatuses(t *testing.T) {
	for _, c := range []struct {
		status     int
		retryAfter string
		sends      int
	}{
		{http.StatusPaymentRequired, "", 1},
		{http.StatusBadRequest, "", 1},
		{http.StatusNotFound, "", 1},
		{http.StatusConflict, "", 1},
		{http.StatusGone, "", 1},
		{http.StatusInternalServerError, "", 1},
		{http.StatusConflict, "0", 2},
		{http.StatusAccepted, "0", 2},
		{http.StatusTooManyRequests, "", 2},
		{http.StatusBadGateway, "", 2},
		{http.StatusServiceUnavailable, "0", 2},
		{http.StatusGatewayTimeout, "", 2},
	} {
		s := newPaidServer(t, declaring(t), func(n int, h http.Header) int {
			if n > 0 {
				return http.StatusOK
			}
			if c.retryAfter != "" {
				h.Set("Retry-After", c.retryAfter)
			}
			return c.status
		})
		_, _, _ = payResend(t, s, x402.Resend{PaymentID: x402.NewPaymentID(), Retries: 1})
		if n := len(s.sent()); n != c.sends {
			t.Errorf("%d (Retry-After %q): sent %d times, want %d", c.status, c.retryAfter, n, c.sends)
		}
	}
}

// TestResendRenewsExpired: a resend refused because its authorization
// expired on the way (the first never arrived) is signed anew, once, with
// the same payment id.
func TestResendRenewsExpired(t *testing.T) {
	s := newPaidServer(t, declaring(t), func(n int, h http.Header) int {
		switch n {
		case 0:
			return drop
		case 1, 2:
			v, _ := x402.EncodeHeader(x402.PaymentRequired{X402Version: 2, Error: "authorization expires too soon (" +
				x402.ReasonValidBefore + ")", Accepts: []x402.Requirements{x402test.Requirements(t)}})
			h.Set(x402.HeaderPaymentRequired, v)
			return http.StatusPaymentRequired
		}
		return http.StatusOK
	})
	id := x402.NewPaymentID()
	_, _, err := payResend(t, s, x402.Resend{PaymentID: id, Retries: 3})
	var refused *x402.PaymentRefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("err %v, want the second expiry refused", err)
	}
	sent := s.sent()
	if len(sent) != 3 || sent[0] != sent[1] || sent[1] == sent[2] || idOf(t, sent[2]) != id {
		t.Fatalf("sent %d: want the payment twice, then a new one with id %s, once", len(sent), id)
	}
}
