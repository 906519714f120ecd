package payments

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd"
	"sandboxd/payments/ledger"
	"sandboxd/payments/retries"
)

// RetriesStore is the retries.Store of led: the keeper's reads of the
// answers table and its sweep, converted field for field. A ledger
// ErrNoAnswer is (wraps) retries.ErrNoAnswer; a row's settlement JSON is
// decoded, and a ready row settled by recovery (no report stored) is given
// the one its payments row says: collected, its transaction, network and
// payer, at the row's x402 version.
func RetriesStore(led *ledger.SQL) retries.Store { return retriesStore{led: led} }

// retriesStore is RetriesStore's retries.Store.
type retriesStore struct{ led *ledger.SQL }

var _ retries.Store = retriesStore{}

// LookupAnswer is ledger.SQL.LookupAnswer, converted.
func (s retriesStore) LookupAnswer(ctx context.Context, payer, key, id string) (retries.Lookup, error) {
	l, err := s.led.LookupAnswer(ctx, payer, key, id)
	if err != nil {
		return retries.Lookup{}, err
	}
	out := retries.Lookup{Payment: l.Payment}
	if l.ByKey != nil {
		m, err := s.meta(ctx, *l.ByKey)
		if err != nil {
			return retries.Lookup{}, err
		}
		out.ByKey = &m
	}
	switch {
	case l.ByID != nil && l.ByID == l.ByKey:
		out.ByID = out.ByKey
	case l.ByID != nil:
		m, err := s.meta(ctx, *l.ByID)
		if err != nil {
			return retries.Lookup{}, err
		}
		out.ByID = &m
	}
	return out, nil
}

// AnswerState is ledger.SQL.AnswerState, converted.
func (s retriesStore) AnswerState(ctx context.Context, payer, key string) (retries.Meta, error) {
	m, err := s.led.AnswerState(ctx, payer, key)
	if err != nil {
		return retries.Meta{}, noAnswer(err)
	}
	return s.meta(ctx, m)
}

// AnswerBody is ledger.SQL.AnswerBody, converted.
func (s retriesStore) AnswerBody(ctx context.Context, payer, key string) (retries.Meta, []byte, error) {
	m, body, err := s.led.AnswerBody(ctx, payer, key)
	if err != nil {
		return retries.Meta{}, nil, noAnswer(err)
	}
	meta, err := s.meta(ctx, m)
	if err != nil {
		return retries.Meta{}, nil, err
	}
	return meta, body, nil
}

// SweepAnswers is ledger.SQL.SweepAnswers, converted.
func (s retriesStore) SweepAnswers(ctx context.Context, maxBytes int64) (retries.SweepReport, error) {
	r, err := s.led.SweepAnswers(ctx, maxBytes)
	return retries.SweepReport{Expired: r.Expired, Evicted: r.Evicted, EvictedBytes: r.EvictedBytes, Bytes: r.Bytes}, err
}

// noAnswer makes the ledger's ErrNoAnswer the keeper's too.
func noAnswer(err error) error {
	if errors.Is(err, ledger.ErrNoAnswer) {
		return fmt.Errorf("%w: %w", retries.ErrNoAnswer, err)
	}
	return err
}

// meta is m as the keeper reads it, its settlement decoded (or built from
// the payments row of a ready row that stored none).
func (s retriesStore) meta(ctx context.Context, m ledger.AnswerMeta) (retries.Meta, error) {
	out := retries.Meta{Payer: m.Payer, Key: m.Key, ID: m.ID, Request: m.Request, Kind: sandboxd.AnswerKind(m.Kind),
		Transport: sandboxd.Transport(m.Transport), State: m.State, X402Version: m.X402Version, Status: m.Status,
		BodyBytes: m.BodyBytes, AnswerBytes: m.AnswerBytes, Dropped: m.Dropped, Created: m.Created, Expires: m.Expires}
	if len(m.Settlement) > 0 {
		out.Settlement = new(sandboxd.Settlement)
		if err := json.Unmarshal(m.Settlement, out.Settlement); err != nil {
			return retries.Meta{}, fmt.Errorf("payments: the settlement kept with an answer does not decode: %w", err)
		}
		if string(out.Settlement.Extra) == "null" { // encoded from none
			out.Settlement.Extra = nil
		}
		return out, nil
	}
	if m.State != ledger.AnswerReady {
		return out, nil
	}
	e, err := s.led.Get(ctx, m.Payer, m.Key)
	switch {
	case errors.Is(err, sql.ErrNoRows): // a channel's key: its commit stores its report
		return out, nil
	case err != nil:
		return retries.Meta{}, err
	}
	out.Settlement = &sandboxd.Settlement{Version: m.X402Version, Success: e.Status == ledger.StatusSettled,
		Transaction: e.TxHash, Network: e.Network, Payer: common.HexToAddress(m.Payer).Hex()}
	return out, nil
}
