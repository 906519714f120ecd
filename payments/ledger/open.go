package ledger

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// DefaultLease is how long a replica may go without a heartbeat before
// another replica resolves its open rows (payments.lease).
const DefaultLease = 30 * time.Second

// Config says which ledger to open and as which replica.
type Config struct {
	// Ledger is payments.ledger: a file path (SQLite) or a postgres:// URL.
	Ledger string
	// Replica is payments.replica_id; empty means DefaultReplica("").
	Replica string
	// Lease is payments.lease; zero means DefaultLease.
	Lease time.Duration
	// Now is the clock of the rows' stamps (created_at, updated_at); nil
	// means time.Now. Heartbeats and the lease use the database's clock.
	Now func() time.Time
	// Observe, when set, is told how long each write took (op is reserve,
	// settling, settled, failed or released; channel_* and claimer_* for
	// the channels' writes). It must not block.
	Observe func(op string, d time.Duration)
}

// DefaultReplica is the replica id used when payments.replica_id is empty:
// the host name and the runtime instance ("default" when empty), which
// tells apart the replicas of a host as the containers' labels do.
func DefaultReplica(instance string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	if instance == "" {
		instance = "default"
	}
	return host + "/" + instance
}

// IsPostgresURL reports whether a payments.ledger value names PostgreSQL
// rather than a SQLite file.
func IsPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Redact is a payments.ledger value fit for logs and messages: a
// file path as it is, a PostgreSQL URL as its scheme, host, port and
// database only. Secrets travel elsewhere too (the password in the
// userinfo, or as ?password= or ?sslpassword= in the query), so nothing
// else of the URL is ever shown.
func Redact(s string) string {
	if !IsPostgresURL(s) {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// Open opens the ledger c names, migrated to schemaVersion, and
// records a first heartbeat. Errors are CodeUnavailable.
func Open(ctx context.Context, c Config) (*SQL, error) {
	l, err := OpenAt(ctx, c.Ledger)
	if err != nil {
		return nil, err
	}
	if c.Replica != "" {
		l.replica = c.Replica
	}
	if c.Lease > 0 {
		l.lease = c.Lease
	}
	if c.Now != nil {
		l.now = c.Now
	}
	l.observe = c.Observe
	if err := l.holdReplicaID(ctx); err != nil {
		l.Close()
		return nil, err
	}
	if err := l.Heartbeat(ctx); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// OpenAt opens the ledger at a payments.ledger value, a SQLite path
// or a postgres:// URL, migrated, without taking part in the fleet (no
// heartbeat): for the operator's commands.
func OpenAt(ctx context.Context, location string) (*SQL, error) {
	if IsPostgresURL(location) {
		return openPostgres(ctx, location)
	}
	return OpenFile(ctx, location)
}

// Replica returns the id this ledger records on the rows it reserves.
func (l *SQL) Replica() string { return l.replica }

// Validate checks a payments.ledger value.
func Validate(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("is empty; set the path of the SQLite ledger file or a postgres:// URL")
	case IsPostgresURL(s):
		if u, err := url.Parse(s); err != nil || u.Host == "" {
			return fmt.Errorf("%q is not a postgres://user:password@host:port/database URL", Redact(s))
		}
	}
	return nil
}

// Lease returns how long a replica may be silent before the others resolve
// its open rows and end its sessions (payments.lease).
func (l *SQL) Lease() time.Duration { return l.lease }
