package sandboxd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// SessionRegistry records, for a fleet, which replica holds each session,
// so that any replica can find it (and forward a call to it) without
// sticky routing. The ledger implements it on the shared PostgreSQL
// (payments/ledger, the sessions table); a single host has none. It never
// sees an id: each session is named by its SessionHash.
//
// Opened records a session just started on this replica; a session the
// registry could not record is not opened (an *Error, CodeUnavailable).
// Called records a call's end: when it was and when the session now
// expires. Ended records its end, why being a sentence for a person
// ("this session was closed"). Called and Ended are best effort: the
// session's own replica is the truth while it lives, and its lease ends
// its rows when it dies.
//
// Held counts the sessions owner holds open on the live replicas of the
// fleet, this one's included, so that sessions.max_per_payer holds across
// the fleet. An *Error, CodeUnavailable, when the registry cannot be read.
//
// Locate says where the session of hash lives. It returns an *Error: CodeNotFound
// when the registry never heard of it, CodeUnavailable when the registry
// cannot be read.
type SessionRegistry interface {
	Opened(ctx context.Context, s SessionRecord) error
	Called(ctx context.Context, hash string, lastCall, expires time.Time) error
	Ended(ctx context.Context, hash, why string) error
	Locate(ctx context.Context, hash string) (SessionPlace, error)
	Held(ctx context.Context, owner string) (int, error)
}

// SessionRecord is what the registry keeps of a session when it opens.
type SessionRecord struct {
	// Hash is the SessionHash of its id.
	Hash        string
	Owner       string
	Environment string
	Created     time.Time
	Expires     time.Time
}

// SessionPlace is where a session lives, as the registry knows it.
type SessionPlace struct {
	// Replica is the id of the replica that holds it (payments.replica_id)
	// and URL that replica's internal address (server.advertise_url).
	Replica, URL string
	// Environment is the session's environment (a forwarded call is bounded
	// by its timeout).
	Environment string
	// Here reports that this replica holds it (or held it).
	Here bool
	// Ended reports that it ended, or that its replica's lease ran out
	// (its host is gone); Why then says which, for a person.
	Ended bool
	Why   string
}

// SessionHash is what a session id is stored and looked up under outside
// its own replica's memory: its SHA-256 in hex. The id is a capability;
// its hash is not.
func SessionHash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}
