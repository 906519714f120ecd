package channels

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"sync"
	"testing"
	"time"

	"sandboxd/payments/ledger"
)

// fakeStore is the ledger's channel rows and payment rows in memory, with
// the semantics of the SQL of docs/design/channels.md §4.4: the reserve is
// a compare-and-set on (state open, charged, no live hold), the commit
// counts the hold it names once, and a payment row moves as
// ledger.SQL's do. Rows are copied in and out, so the seller never shares
// a big.Int with it.
type fakeStore struct {
	mu       sync.Mutex
	now      func() time.Time
	channels map[string]ledger.Channel
	charges  []fakeCharge
	payments map[[2]string]ledger.Entry
	// reserves counts the ReserveIncrement calls.
	reserves int
	// failCommit, when set, is returned by the next CommitIncrement
	// instead of committing (a ledger that cannot be reached).
	failCommit error
	// down, when set, is returned by every read of a channel.
	down error
}

var _ Store = (*fakeStore)(nil)

// fakeCharge is one channel_charges row.
type fakeCharge struct {
	channel, resource string
	chargedAfter, max *big.Int
	amount            *big.Int
}

// newFakeStore returns an empty store whose holds lapse by now.
func newFakeStore(now func() time.Time) *fakeStore {
	return &fakeStore{now: now, channels: map[string]ledger.Channel{}, payments: map[[2]string]ledger.Entry{}}
}

// put stores c as it is (a test's starting state).
func (s *fakeStore) put(c ledger.Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[c.ID] = cloneChannel(c)
}

// get returns the row of id, failing the test when there is none.
func (s *fakeStore) get(tb testing.TB, id string) ledger.Channel {
	tb.Helper()
	c, err := s.Channel(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// reserveCalls returns how many reservations were attempted.
func (s *fakeStore) reserveCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reserves
}

// chargeRows returns the channel_charges rows of id.
func (s *fakeStore) chargeRows(id string) []fakeCharge {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []fakeCharge
	for _, c := range s.charges {
		if c.channel == id {
			out = append(out, c)
		}
	}
	return out
}

// onlyPayment returns the one payment row, failing the test unless there
// is exactly one.
func (s *fakeStore) onlyPayment(tb testing.TB) ledger.Entry {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.payments) != 1 {
		tb.Fatalf("%d payment rows, want 1: %+v", len(s.payments), s.payments)
	}
	var e ledger.Entry
	for _, e = range s.payments {
	}
	return e
}

// setHold replaces the hold of id (nil drops it): another replica taking
// the channel after this one's lease lapsed.
func (s *fakeStore) setHold(id string, h *ledger.Hold) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channels[id]
	c.Hold = cloneHold(h)
	s.channels[id] = c
}

func (s *fakeStore) Channel(_ context.Context, id string) (ledger.Channel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down != nil {
		return ledger.Channel{}, s.down
	}
	c, ok := s.channels[id]
	if !ok {
		return ledger.Channel{}, ledger.ErrNoChannel
	}
	return cloneChannel(c), nil
}

func (s *fakeStore) AdoptChannel(_ context.Context, c ledger.Channel) (ledger.Channel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if got, ok := s.channels[c.ID]; ok {
		return cloneChannel(got), nil
	}
	c = cloneChannel(c)
	c.CreatedAt, c.UpdatedAt = s.now(), s.now()
	s.channels[c.ID] = c
	return cloneChannel(c), nil
}

func (s *fakeStore) ReopenChannel(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[id]
	if !ok {
		return ledger.ErrNoChannel
	}
	if c.State == ledger.ChannelClosed {
		c.State = ledger.ChannelOpen
		s.channels[id] = c
	}
	return nil
}

// live reports whether h is held: a hold whose Until passed is not.
func (s *fakeStore) live(h *ledger.Hold) bool {
	return h != nil && h.ID != "" && !h.Until.Before(s.now())
}

func (s *fakeStore) ReserveIncrement(_ context.Context, id string, expected *big.Int, h ledger.Hold) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserves++
	c, ok := s.channels[id]
	if !ok || c.State != ledger.ChannelOpen || c.Charged.Cmp(expected) != 0 || s.live(c.Hold) {
		return ledger.ErrChannelMoved
	}
	c.Hold = cloneHold(&h)
	c.UpdatedAt = s.now()
	s.channels[id] = c
	return nil
}

func (s *fakeStore) CommitIncrement(_ context.Context, id, holdID string, expected *big.Int, resource string,
	_ *ledger.AnswerCommit) (ledger.Channel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.failCommit; err != nil {
		s.failCommit = nil
		return ledger.Channel{}, err
	}
	c, ok := s.channels[id]
	if !ok || c.Hold == nil || c.Hold.ID != holdID || c.Charged.Cmp(expected) != 0 {
		return ledger.Channel{}, ledger.ErrHoldLost
	}
	after := new(big.Int).Add(c.Charged, c.Hold.Amount)
	for _, ch := range s.charges {
		if ch.channel == id && ch.chargedAfter.Cmp(after) == 0 {
			return ledger.Channel{}, fmt.Errorf("channel_charges: duplicate key (%s, %s)", id, after)
		}
	}
	s.charges = append(s.charges, fakeCharge{channel: id, resource: resource, chargedAfter: after,
		max: new(big.Int).Set(c.Hold.Max), amount: new(big.Int).Set(c.Hold.Amount)})
	c.Charged, c.VoucherMax, c.VoucherSig = after, new(big.Int).Set(c.Hold.Max), slices.Clone(c.Hold.Sig)
	c.Hold, c.Calls, c.LastChargedAt, c.UpdatedAt = nil, c.Calls+1, s.now(), s.now()
	s.channels[id] = c
	return cloneChannel(c), nil
}

func (s *fakeStore) ReleaseIncrement(_ context.Context, id, holdID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[id]
	if ok && c.Hold != nil && c.Hold.ID == holdID {
		c.Hold = nil
		s.channels[id] = c
	}
	return nil
}

func (s *fakeStore) UpdateMirror(_ context.Context, id string, m ledger.Mirror) (ledger.Channel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[id]
	if !ok {
		return ledger.Channel{}, ledger.ErrNoChannel
	}
	c.Balance, c.Claimed, c.WithdrawAmount = clone(m.Balance), clone(m.Claimed), clone(m.WithdrawAmount)
	c.WithdrawAt, c.RefundNonce, c.SyncedAt = m.WithdrawAt, clone(m.RefundNonce), s.now()
	s.channels[id] = c
	return cloneChannel(c), nil
}

func (s *fakeStore) Reserve(_ context.Context, e ledger.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{e.Payer, e.Nonce}
	if old, ok := s.payments[k]; ok && old.Status != ledger.StatusReleased {
		return ledger.ErrAlreadyUsed
	}
	e.Status, e.TxHash, e.RunStatus, e.Reason = ledger.StatusReserved, "", "", ""
	s.payments[k] = e
	return nil
}

// move moves the payment row (payer, nonce) from one of the states from,
// as ledger.SQL's move does.
func (s *fakeStore) move(payer, nonce string, from []string, set func(*ledger.Entry)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{payer, nonce}
	e, ok := s.payments[k]
	if !ok || !slices.Contains(from, e.Status) {
		return ledger.ErrNotReserved
	}
	set(&e)
	s.payments[k] = e
	return nil
}

func (s *fakeStore) MarkSettling(_ context.Context, payer, nonce string, _ *ledger.Body) error {
	return s.move(payer, nonce, []string{ledger.StatusReserved}, func(e *ledger.Entry) { e.Status = ledger.StatusSettling })
}

func (s *fakeStore) MarkSettled(_ context.Context, payer, nonce, tx, runStatus string, _ []byte) error {
	return s.move(payer, nonce, []string{ledger.StatusSettling}, func(e *ledger.Entry) {
		e.Status, e.TxHash, e.RunStatus = ledger.StatusSettled, tx, runStatus
	})
}

func (s *fakeStore) MarkFailed(_ context.Context, payer, nonce, tx, reason string) error {
	return s.move(payer, nonce, []string{ledger.StatusSettling}, func(e *ledger.Entry) {
		e.Status, e.TxHash, e.Reason = ledger.StatusFailed, tx, reason
	})
}

func (s *fakeStore) MarkPending(_ context.Context, payer, nonce, tx string, _ []byte) error {
	return s.move(payer, nonce, []string{ledger.StatusSettling}, func(e *ledger.Entry) {
		e.TxHash, e.Reason = tx, ledger.ReasonSettlementPending
	})
}

func (s *fakeStore) MarkReleased(_ context.Context, payer, nonce string) error {
	return s.move(payer, nonce, []string{ledger.StatusReserved, ledger.StatusSettling}, func(e *ledger.Entry) {
		e.Status = ledger.StatusReleased
	})
}

// clone is a copy of n (nil stays nil).
func clone(n *big.Int) *big.Int {
	if n == nil {
		return nil
	}
	return new(big.Int).Set(n)
}

// cloneHold is a deep copy of h.
func cloneHold(h *ledger.Hold) *ledger.Hold {
	if h == nil {
		return nil
	}
	c := *h
	c.Amount, c.Max, c.Sig = clone(h.Amount), clone(h.Max), slices.Clone(h.Sig)
	return &c
}

// cloneChannel is a deep copy of c.
func cloneChannel(c ledger.Channel) ledger.Channel {
	c.Charged, c.VoucherMax, c.VoucherSig = clone(c.Charged), clone(c.VoucherMax), slices.Clone(c.VoucherSig)
	c.Balance, c.Claimed, c.WithdrawAmount, c.RefundNonce = clone(c.Balance), clone(c.Claimed), clone(c.WithdrawAmount), clone(c.RefundNonce)
	c.Hold = cloneHold(c.Hold)
	return c
}
