package sandboxd

import (
	"context"
	"time"
)

// Sessions keep one interpreter alive across calls: one container per
// session, one call at a time, for the tenant that opened it. The design is
// in ARCHITECTURE.md ("Sessions"). httpapi uses Sessions as it uses the
// Runner; the sessions package implements it on a SessionEngine, which the
// runtime implements on Docker.

// Sessions is the table of live sessions. Opening and calling are phased
// around the payment, as PaymentGate is around the sandbox slot: room is
// looked at (Room) before a payment is checked and held (Hold) only after
// the payment checked out, so that payments that will never verify hold
// nothing; a session's turn is taken (Turn) before its payment is reserved,
// so that a refusal for capacity, ownership or a busy session never costs
// the caller anything.
//
// Room reports whether a session could open in environment now, holding
// nothing. It returns an *Error:
//   - CodeBusy (RetryAfter set: the earliest a session is due to end) when
//     sessions are at their capacity (count or memory);
//   - CodeInvalid for an unknown environment;
//   - CodeUnavailable when the table is closing.
//
// Hold holds room for one new session in environment, running language
// (a canonical name that Catalog.Resolve chose with environment); its
// errors are Room's (room may have gone since Room said yes).
//
// Turn finds session id and takes its turn for one call by owner (the
// wallet that paid for the call, "" in free mode). It returns an *Error:
//   - CodeNotFound for an unknown, ended or expired id (the message says
//     which);
//   - CodeForbidden when owner is not the session's owner (nothing waited);
//   - CodeConflict when another call still runs after the queue wait;
//   - ctx's error when ctx ended first.
//
// Get returns a session's state; CodeNotFound as for Turn.
//
// Close ends a session and removes its container: the id is the
// capability (an unpaid request may end its session). A call running in
// it is cut off and answered as the service's failure (not charged).
// CodeNotFound as for Turn.
type Sessions interface {
	Room(environment string) error
	Hold(ctx context.Context, environment, language string) (SessionHold, error)
	Turn(ctx context.Context, id, owner string) (SessionTurn, error)
	Get(ctx context.Context, id string) (SessionInfo, error)
	Close(ctx context.Context, id string) error
}

// SessionHold is room held for one session not started yet. Release must
// be called on every path; after a successful Start it does nothing.
//
// Claim names the session's owner (the paying wallet, "" in free mode)
// and the client that asks (its address, as the per-client caps count it)
// and counts the session against the owner's cap (sessions.max_per_payer,
// across the fleet when there is one) or, in free mode, the client's
// (sessions.max_per_client): CodeBusy (RetryAfter set) when either holds
// as many sessions as it may; CodeUnavailable when the fleet's registry
// cannot be read. Claim is called at most once, before Start.
//
// Start starts the session's container and returns its state. It returns
// an *Error: CodeUnavailable when the engine cannot start it or the table
// is closing, CodeInvalid or CodeInternal from the engine, ctx's error when
// ctx ended first. After an error the hold still needs its Release.
type SessionHold interface {
	Claim(ctx context.Context, owner, client string) error
	Start(ctx context.Context) (SessionInfo, error)
	Release()
}

// SessionTurn is a session's turn for one call. Release must be called on
// every path; it ends the turn.
//
// Run runs job in the session, once, and returns what it did; a program
// that fails, loops or ends its own session is a SessionResult, not an
// error. It returns an *Error (CodeUnavailable or CodeInternal) when the
// service failed to deliver; the session is then ended.
type SessionTurn interface {
	Run(ctx context.Context, job Job) (SessionResult, error)
	Release()
}

// SessionInfo is a session's state as callers see it.
type SessionInfo struct {
	// ID is the session's capability: 128 random bits or more. Never logged
	// in full.
	ID          string
	Environment string
	// Language is the canonical name of the language the session runs;
	// a session never changes it, as it holds one live interpreter.
	Language string
	Created  time.Time
	// LastCall is when the last call ended; zero before the first.
	LastCall time.Time
	// Expires is when the session ends unless a call comes first: the
	// earlier of the idle deadline and the end of its lifetime.
	Expires     time.Time
	IdleTimeout time.Duration
	MaxLifetime time.Duration
	// Calls counts the calls run so far.
	Calls int
	// Busy reports that a call is running.
	Busy bool
}

// SessionResult is what one call in a session produced.
type SessionResult struct {
	// Result is the call's result, as a one-shot run's; Files are the files
	// the call created or changed.
	Result
	// Value is the repr of the value of the program's last expression
	// statement, cut at the output cap; nil when there was none (or it
	// was None).
	Value *string
	// Ended reports that the call ended the session (the interpreter died,
	// or did not come back from the interrupt at the timeout);
	// EndReason says why, for a person.
	Ended     bool
	EndReason string
	// Session is the session's state after the call.
	Session SessionInfo
}

// SessionEngine starts session containers. The runtime implements it.
//
// OpenSession starts, or takes from the environment's warm pool, a
// container whose runner is switched into its loop for language (a
// canonical name the environment runs), hardened exactly like a run's.
// It returns an *Error: CodeInvalid for an unknown environment,
// CodeUnavailable when the engine or image is missing, CodeInternal
// otherwise, ctx's error when ctx ended first.
type SessionEngine interface {
	OpenSession(ctx context.Context, environment, language string) (SessionContainer, error)
}

// SessionContainer is one live session container.
//
// Run hands one call over and watches it to its end: at the environment's
// timeout the call is interrupted (KeyboardInterrupt) and answered as a
// timeout; if the interpreter does not come back within the grace, the
// container is killed and the result says Ended. Calls never overlap: the
// caller runs one at a time. Errors are the service's own (as for
// Runner.Run); after an error the container is ended.
//
// Ended is closed once the container has ended for any reason (a call's
// end, output between calls past the cap, the container stopping by
// itself, Close); EndReason then says why.
//
// Close kills and removes the container; it may be called more than once,
// and waits for the removal at most until ctx ends.
type SessionContainer interface {
	Run(ctx context.Context, job Job) (SessionResult, error)
	Ended() <-chan struct{}
	EndReason() string
	Close(ctx context.Context) error
}
