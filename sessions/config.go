package sessions

import (
	"time"

	"sandboxd"
)

// Config bounds the table. cmd/sandboxd fills it from the sessions.* keys,
// validated there once.
type Config struct {
	// Max is sessions.max: the sessions open (or opening) at once.
	Max int
	// MaxPerPayer is sessions.max_per_payer: the sessions one wallet may
	// hold at once; 0 means no cap of its own. Free sessions (owner "")
	// are never counted against it.
	MaxPerPayer int
	// MaxPerClient is sessions.max_per_client: the free sessions one
	// client address (an IPv6 /64) may hold at once; 0 means no cap of its
	// own. Paid sessions are counted by their wallet instead.
	MaxPerClient int
	// Memory is sessions.memory: the memory limits of the sessions open at
	// once may add up to at most this many bytes.
	Memory int64
	// Environments are the environments a session may run in, each with
	// the memory limit it counts against Memory.
	Environments map[string]int64
	// IdleTimeout is sessions.idle_timeout: a session ends this long after
	// its last call ended (or its start, before any call).
	IdleTimeout time.Duration
	// MaxLifetime is sessions.max_lifetime: a session ends this long after
	// its start, whatever it does (a call in flight finishes first).
	MaxLifetime time.Duration
	// QueueWait is sessions.queue_wait: how long a call waits for the one
	// before it to end, then CodeConflict.
	QueueWait time.Duration
	// Observer, when set, is told of sessions opened and ended and of
	// calls (the metrics).
	Observer Observer
	// Registry, when set, records each session for the fleet (registry.go):
	// a session it cannot record is not opened.
	Registry sandboxd.SessionRegistry
}

// Observer is told what the table does, for the metrics. Its methods must
// not block.
type Observer interface {
	// SessionOpened: a session started in environment.
	SessionOpened(environment string)
	// SessionEnded: a session of environment ended, for reason (one of
	// the Reason constants).
	SessionEnded(environment, reason string)
	// SessionCalled: a call in environment ended with status, or with
	// err when the service failed to deliver it.
	SessionCalled(environment string, status sandboxd.Status, err error)
}

// Why a session ended: the values of the metrics' reason label, a small
// fixed set.
const (
	// ReasonClosed: its caller closed it (DELETE).
	ReasonClosed = "closed"
	// ReasonIdle: no call came within the idle timeout.
	ReasonIdle = "idle"
	// ReasonLifetime: it reached its maximum lifetime.
	ReasonLifetime = "lifetime"
	// ReasonEndedByProgram: its interpreter ended (os._exit, a crash, the
	// OOM killer, a signal).
	ReasonEndedByProgram = "ended_by_program"
	// ReasonInterrupt: its interpreter did not come back from a timeout's
	// interrupt within the grace, and was killed.
	ReasonInterrupt = "interrupt"
	// ReasonOutputBetweenCalls: it wrote more than the output cap between
	// two calls.
	ReasonOutputBetweenCalls = "output_between_calls"
	// ReasonShutdown: the service stopped.
	ReasonShutdown = "shutdown"
	// ReasonFailed: the service failed to deliver a call or lost the
	// container.
	ReasonFailed = "failed"
)

// Reasons lists every Reason, for the metrics to show each from the start.
var Reasons = []string{ReasonClosed, ReasonIdle, ReasonLifetime, ReasonEndedByProgram, ReasonInterrupt,
	ReasonOutputBetweenCalls, ReasonShutdown, ReasonFailed}
