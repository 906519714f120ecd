package ledger

import (
	"context"
	"database/sql"
	"sync"
)

// stmts prepares each statement of the paid hot path once and keeps it:
// SQLite parses a statement in about a tenth of a millisecond, a third
// of a voucher's ledger time when redone for every statement of every
// call. A statement that cannot be prepared runs unprepared, which
// reports the error itself.
type stmts struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// get returns query prepared, preparing it on first use. It takes a
// connection to prepare: never call it holding one (the SQLite ledger has
// one), which is why a transaction only finds statements (see warm).
//
// The lock is not held while preparing: the connection's holder may be
// looking a statement up.
func (s *stmts) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if st := s.find(query); st != nil {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if kept, ok := s.m[query]; ok {
		st.Close()
		return kept, nil
	}
	if s.m == nil {
		s.m = map[string]*sql.Stmt{}
	}
	s.m[query] = st
	return st, nil
}

// find returns query's statement if it is kept, without preparing it.
func (s *stmts) find(query string) *sql.Stmt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[query]
}

// warm prepares queries, before a transaction runs them: a statement is
// prepared on a connection of its own, which a transaction holds.
func (s *stmts) warm(ctx context.Context, queries ...string) {
	for _, q := range queries {
		_, _ = s.get(ctx, q)
	}
}

// close closes every statement kept.
func (s *stmts) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.m {
		st.Close()
	}
	s.m = nil
}

// in returns a querier and execer of kept statements, run in tx when it
// is set (statements warmed before it; others run unprepared), else on
// the database (prepared on first use).
func (s *stmts) in(tx *sql.Tx) prepared { return prepared{s: s, tx: tx} }

// prepared runs statements prepared once, in its transaction if any.
type prepared struct {
	s  *stmts
	tx *sql.Tx
}

// stmt returns query's kept statement, bound to the transaction; nil
// when it is not kept (in a transaction) or cannot be prepared.
func (p prepared) stmt(ctx context.Context, query string) *sql.Stmt {
	if p.tx != nil {
		if st := p.s.find(query); st != nil {
			return p.tx.StmtContext(ctx, st)
		}
		return nil
	}
	st, err := p.s.get(ctx, query)
	if err != nil {
		return nil
	}
	return st
}

// QueryRowContext runs query, prepared once.
func (p prepared) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	if p.tx != nil {
		return p.tx.QueryRowContext(ctx, query, args...)
	}
	return p.s.db.QueryRowContext(ctx, query, args...)
}

// ExecContext runs query, prepared once.
func (p prepared) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := p.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	if p.tx != nil {
		return p.tx.ExecContext(ctx, query, args...)
	}
	return p.s.db.ExecContext(ctx, query, args...)
}
