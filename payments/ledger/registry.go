package ledger

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"sandboxd"
)

// Registry is the fleet's session registry (sandboxd.SessionRegistry) on
// the ledger's database: one row per session, keyed by the hash of its id,
// naming the replica that holds it and that replica's internal address. A
// session of a replica whose lease ran out (by the database's clock, as
// the payments' rows) is ended: its host is gone.
type Registry struct {
	l *SQL
	// url is this replica's server.advertise_url.
	url string
}

var _ sandboxd.SessionRegistry = (*Registry)(nil)

// Registry states and the why of a session whose host is gone.
const (
	sessionOpen  = "open"
	sessionEnded = "ended"
)

// endedKeep is how long an ended session's row is kept, so that a late
// call through any replica hears why it ended.
const endedKeep = 24 * time.Hour

// Registry returns the session registry of this replica, reachable by the
// other replicas at url (server.advertise_url).
func (l *SQL) Registry(url string) *Registry { return &Registry{l: l, url: url} }

// hostGone is the why of the sessions of a replica whose lease ran out.
// A why is shown to callers, so it names no replica: the fleet's topology
// is the operator's (sandboxd ledger sessions).
const hostGone = "this session's host is gone: the replica that held it stopped answering and its sessions " +
	"ended with it; nothing was charged for this call"

// Opened records a session just opened on this replica.
func (r *Registry) Opened(ctx context.Context, s sandboxd.SessionRecord) error {
	const op = "sessions.registry.opened"
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	_, err := r.l.db.ExecContext(ctx, r.l.dialect.bind(`INSERT INTO sessions
	(id_hash, replica, url, owner, environment, created_at, expires_at, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
		s.Hash, r.l.replica, r.url, key(s.Owner), s.Environment, formatStamp(s.Created),
		formatStamp(s.Expires), sessionOpen)
	if err != nil {
		return ledgerErrorMsg(op, err, "the fleet's session registry (the ledger) cannot be written; "+
			"no session can be opened until it can, and nothing was charged")
	}
	return nil
}

// Called records a call's end in the session of hash, of this replica.
func (r *Registry) Called(ctx context.Context, hash string, lastCall, expires time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	_, err := r.l.db.ExecContext(ctx, r.l.dialect.bind(`UPDATE sessions SET last_call_at = ?, expires_at = ?
WHERE id_hash = ? AND replica = ? AND state = ?`),
		formatStamp(lastCall), formatStamp(expires), hash, r.l.replica, sessionOpen)
	if err != nil {
		return ledgerError("sessions.registry.called", err)
	}
	return nil
}

// Ended records the end of the session of hash, of this replica, for why.
func (r *Registry) Ended(ctx context.Context, hash, why string) error {
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	_, err := r.l.db.ExecContext(ctx, r.l.dialect.bind(`UPDATE sessions SET state = ?, why = ?, ended_at = `+r.l.dialect.dbNow+`
WHERE id_hash = ? AND replica = ? AND state = ?`), sessionEnded, why, hash, r.l.replica, sessionOpen)
	if err != nil {
		return ledgerError("sessions.registry.ended", err)
	}
	return nil
}

// Locate says where the session of hash lives: its replica and address, or why it
// ended. An open session whose replica's lease ran out is reported ended,
// its host gone, before EndStale marks it so.
func (r *Registry) Locate(ctx context.Context, hash string) (sandboxd.SessionPlace, error) {
	const op = "sessions.registry.locate"
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	var p sandboxd.SessionPlace
	var state string
	var alive bool
	err := r.l.db.QueryRowContext(ctx, r.l.dialect.bind(`SELECT s.replica, s.url, s.environment, s.state, s.why,
	EXISTS (SELECT 1 FROM replicas WHERE id = s.replica AND seen_at >= `+r.l.dialect.dbAgo+`)
FROM sessions s WHERE s.id_hash = ?`), r.l.lease.Seconds(), hash).
		Scan(&p.Replica, &p.URL, &p.Environment, &state, &p.Why, &alive)
	if errors.Is(err, sql.ErrNoRows) {
		return p, sandboxd.Errorf(sandboxd.CodeNotFound, op, "the fleet's registry knows no such session")
	}
	if err != nil {
		return p, ledgerErrorMsg(op, err, "the fleet's session registry (the ledger) cannot be read; "+
			"nothing was charged, retry in a few seconds")
	}
	p.Here = p.Replica == r.l.replica
	switch {
	case state == sessionEnded:
		p.Ended = true
	case !alive && !p.Here:
		p.Ended, p.Why = true, hostGone
	}
	return p, nil
}

// EndStale ends the open sessions of every other replica whose lease ran
// out, by the database's clock, and forgets the ended rows older than
// endedKeep. It returns how many it ended.
func (r *Registry) EndStale(ctx context.Context) (int64, error) {
	const op = "sessions.registry.endstale"
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	d := r.l.dialect
	res, err := r.l.db.ExecContext(ctx, d.bind(`UPDATE sessions SET state = ?, ended_at = `+d.dbNow+`,
	why = ? WHERE state = ? AND replica <> ?
	AND replica NOT IN (SELECT id FROM replicas WHERE seen_at >= `+d.dbAgo+`)`),
		sessionEnded, hostGone, sessionOpen, r.l.replica, r.l.lease.Seconds())
	if err != nil {
		return 0, ledgerError(op, err)
	}
	n, _ := res.RowsAffected()
	if _, err := r.l.db.ExecContext(ctx, d.bind(`DELETE FROM sessions WHERE state = ? AND ended_at < `+d.dbAgo),
		sessionEnded, endedKeep.Seconds()); err != nil {
		return n, ledgerError(op, err)
	}
	return n, nil
}

// EndOwn ends every session this replica's registry still holds open: at
// start, a replica holds no session (its containers are reaped), whatever
// an earlier process of its id left. It returns how many it ended.
func (r *Registry) EndOwn(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	res, err := r.l.db.ExecContext(ctx, r.l.dialect.bind(`UPDATE sessions SET state = ?, why = ?, ended_at = `+r.l.dialect.dbNow+`
WHERE state = ? AND replica = ?`), sessionEnded, "this session ended: the replica that held it restarted",
		sessionOpen, r.l.replica)
	if err != nil {
		return 0, ledgerError("sessions.registry.endown", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// ReplicaSessions is the open sessions of one replica in one environment.
type ReplicaSessions struct {
	Replica, URL, Environment string
	// Open counts them; Oldest is when the oldest opened.
	Open   int
	Oldest time.Time
	// Alive reports that the replica's lease holds.
	Alive bool
}

// OpenSessions lists the open sessions by replica and environment, never
// their ids (the table holds none), for `sandboxd ledger sessions` and the
// metrics. A replica is alive when it beat its heartbeat within lease (0:
// the ledger's own lease).
func (l *SQL) OpenSessions(ctx context.Context, lease time.Duration) ([]ReplicaSessions, error) {
	if lease <= 0 {
		lease = l.lease
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	rows, err := l.db.QueryContext(ctx, l.dialect.bind(`SELECT s.replica, MIN(s.url), s.environment, COUNT(*), MIN(s.created_at),
	EXISTS (SELECT 1 FROM replicas WHERE id = s.replica AND seen_at >= `+l.dialect.dbAgo+`)
FROM sessions s WHERE s.state = ? GROUP BY s.replica, s.environment ORDER BY s.replica, s.environment`),
		lease.Seconds(), sessionOpen)
	if err != nil {
		return nil, ledgerError("sessions.registry.list", err)
	}
	defer rows.Close()
	var out []ReplicaSessions
	for rows.Next() {
		var rs ReplicaSessions
		var oldest string
		if err := rows.Scan(&rs.Replica, &rs.URL, &rs.Environment, &rs.Open, &oldest, &rs.Alive); err != nil {
			return nil, ledgerError("sessions.registry.list", err)
		}
		rs.Oldest, _ = time.Parse(stampLayout, oldest)
		out = append(out, rs)
	}
	if err := rows.Err(); err != nil {
		return nil, ledgerError("sessions.registry.list", err)
	}
	return out, nil
}
