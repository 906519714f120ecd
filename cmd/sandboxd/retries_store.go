package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"sandboxd"
	"sandboxd/payments/ledger"
	"sandboxd/payments/retries"
)

// ledgerAnswers is the retries.Store of the ledger's answers table: it
// converts the ledger's shapes to the keeper's, field for field, so that
// neither package imports the other.
type ledgerAnswers struct{ l *ledger.SQL }

var _ retries.Store = ledgerAnswers{}

// LookupAnswer reads the rows of the payment's key and id, and its
// payments row's status.
func (s ledgerAnswers) LookupAnswer(ctx context.Context, payer, key, id string) (retries.Lookup, error) {
	l, err := s.l.LookupAnswer(ctx, payer, key, id)
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

// AnswerState reads the live row of (payer, key), or retries.ErrNoAnswer.
func (s ledgerAnswers) AnswerState(ctx context.Context, payer, key string) (retries.Meta, error) {
	m, err := s.l.AnswerState(ctx, payer, key)
	if err != nil {
		return retries.Meta{}, noAnswer(err)
	}
	return s.meta(ctx, m)
}

// AnswerBody reads the live row of (payer, key) with its bytes, or
// retries.ErrNoAnswer.
func (s ledgerAnswers) AnswerBody(ctx context.Context, payer, key string) (retries.Meta, []byte, error) {
	m, b, err := s.l.AnswerBody(ctx, payer, key)
	if err != nil {
		return retries.Meta{}, nil, noAnswer(err)
	}
	meta, err := s.meta(ctx, m)
	return meta, b, err
}

// SweepAnswers runs one sweep pass of the ledger.
func (s ledgerAnswers) SweepAnswers(ctx context.Context, maxBytes int64) (retries.SweepReport, error) {
	r, err := s.l.SweepAnswers(ctx, maxBytes)
	return retries.SweepReport(r), err
}

// noAnswer wraps the ledger's ErrNoAnswer as the keeper's, and leaves any
// other error as it is.
func noAnswer(err error) error {
	if errors.Is(err, ledger.ErrNoAnswer) {
		return fmt.Errorf("%w: %w", retries.ErrNoAnswer, err)
	}
	return err
}

// meta converts a ledger row, its settlement decoded; a ready row settled
// by recovery (no report stored) has its report built from its payments
// row.
func (s ledgerAnswers) meta(ctx context.Context, m ledger.AnswerMeta) (retries.Meta, error) {
	out := retries.Meta{Payer: m.Payer, Key: m.Key, ID: m.ID, Request: m.Request,
		Kind: sandboxd.AnswerKind(m.Kind), Transport: sandboxd.Transport(m.Transport), State: m.State,
		X402Version: m.X402Version, Status: m.Status, BodyBytes: m.BodyBytes, AnswerBytes: m.AnswerBytes,
		Dropped: m.Dropped, Created: m.Created, Expires: m.Expires}
	switch {
	case len(m.Settlement) > 0:
		var st sandboxd.Settlement
		if err := json.Unmarshal(m.Settlement, &st); err != nil {
			return retries.Meta{}, fmt.Errorf("payments.ledger: the settlement kept with payment %s: %w", m.Key, err)
		}
		out.Settlement = &st
	case m.State == ledger.AnswerReady:
		st, err := s.recovered(ctx, m)
		if err != nil {
			return retries.Meta{}, err
		}
		out.Settlement = st
	}
	return out, nil
}

// recovered is the report of an exact payment settled by recovery, whose
// answers row holds none: its payments row's outcome, hash and network.
func (s ledgerAnswers) recovered(ctx context.Context, m ledger.AnswerMeta) (*sandboxd.Settlement, error) {
	e, err := s.l.Get(ctx, m.Payer, m.Key)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil // a channel's row always keeps its report
	case err != nil:
		return nil, err
	}
	return &sandboxd.Settlement{Version: m.X402Version, Success: e.Status == ledger.StatusSettled,
		Transaction: e.TxHash, Network: e.Network, Payer: e.Payer}, nil
}
