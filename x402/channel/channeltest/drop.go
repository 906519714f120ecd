package channeltest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"sandboxd/x402"
)

// kept is a paid answer the seller keeps, to answer its retry.
type kept struct {
	status int
	header http.Header
	body   []byte
}

// serve answers one request: a paid one whose payment header, or payment
// id, was answered before gets that answer again, marked
// Idempotent-Replayed (with Knobs.Replay); any other is handled, its
// answer kept when it is a 200. A paid answer is then written, or lost on
// the way when Knobs.Drop says so (the connection closed once the request
// was read).
func (s *Seller) serve(w http.ResponseWriter, r *http.Request) {
	value := r.Header.Get(x402.HeaderPaymentSignature)
	if value == "" {
		s.handle(w, r)
		return
	}
	id := PaymentID(value)
	s.mu.Lock()
	s.paid++
	s.headers = append(s.headers, value)
	k := s.kept[value]
	if k == nil && id != "" {
		k = s.kept["id:"+id]
	}
	replay := k != nil && s.knobs.Replay
	s.mu.Unlock()
	if !replay {
		rec := httptest.NewRecorder()
		s.handle(rec, r)
		k = &kept{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	}
	s.mu.Lock()
	if !replay && k.status == http.StatusOK {
		s.kept[value] = k
		if id != "" {
			s.kept["id:"+id] = k
		}
	}
	drop := s.knobs.Drop > 0
	if drop {
		s.knobs.Drop--
	}
	s.mu.Unlock()
	if drop {
		hangUp(s.tb, w)
		return
	}
	write(w, k, replay)
}

// write writes k, marked replayed when replayed.
func write(w http.ResponseWriter, k *kept, replayed bool) {
	for name, values := range k.header {
		w.Header()[name] = values
	}
	if replayed {
		w.Header().Set(x402.HeaderIdempotentReplayed, "true")
	}
	w.WriteHeader(k.status)
	_, _ = w.Write(k.body)
}

// hangUp closes the connection of w without writing a byte.
func hangUp(tb testing.TB, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		tb.Error(err)
		return
	}
	_ = conn.Close()
}

// PaymentID is the payment id a payment header carries, "" when none.
func PaymentID(value string) string {
	var pp struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if x402.DecodeHeader(value, &pp) != nil {
		return ""
	}
	id, _ := x402.ParsePaymentID(pp.Extensions)
	return id
}

// Headers are the payment headers of the paid requests, in order, replays
// and dropped ones included.
func (s *Seller) Headers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.headers...)
}
