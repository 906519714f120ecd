package ledger

import "context"

// Held counts the sessions owner holds open on the live replicas of the
// fleet (this one's included): sessions of a replica whose lease ran out
// are gone with their host, whether or not EndStale has marked them yet.
func (r *Registry) Held(ctx context.Context, owner string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	d := r.l.dialect
	var n int
	err := r.l.db.QueryRowContext(ctx, d.bind(`SELECT COUNT(*) FROM sessions s WHERE s.owner = ? AND s.state = ?
	AND (s.replica = ? OR s.replica IN (SELECT id FROM replicas WHERE seen_at >= `+d.dbAgo+`))`),
		key(owner), sessionOpen, r.l.replica, r.l.lease.Seconds()).Scan(&n)
	if err != nil {
		return 0, ledgerErrorMsg("sessions.registry.held", err, "the fleet's session registry (the ledger) cannot be read; "+
			"nothing was charged, retry in a few seconds")
	}
	return n, nil
}
