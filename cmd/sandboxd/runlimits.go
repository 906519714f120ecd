package main

import (
	"time"

	"sandboxd/httpapi"
	"sandboxd/payments"
)

// runOverhead bounds what a run takes beyond runtime.timeout: creating,
// starting and removing its container on a loaded host.
const runOverhead = 30 * time.Second

// runLimit bounds a run detached from its caller (httpapi.Server.RunLimit):
// the longest timeout of the environments, and the run's overhead.
func (c Config) runLimit() time.Duration { return c.longestTimeout() + runOverhead }

// requestBudget is the longest a POST /v1/code handler may take once its
// body is read: runtime.queue_wait and the run; with payments on, the
// payment flow's budget, which holds them (payments.Config.RequestBudget,
// given the same queue wait and run limit).
func (c Config) requestBudget() time.Duration {
	if c.Payments.Enabled {
		return c.Payments.RequestBudget(c.runBounds())
	}
	return c.queueWait() + c.runLimit()
}

// httpTimeouts returns the HTTP server's timeouts, derived from the keys
// that bound a request: the write deadline covers them whatever they are.
func (c Config) httpTimeouts() httpapi.Timeouts {
	return httpapi.DefaultTimeouts(c.requestBudget())
}

// runBounds is what bounds a paid run, from the one place it is defined:
// the queue wait (a sandbox slot's, or a session's turn's) and the run limit, which the payments section's validity
// window and request budget hold (payments.Config.Window, RequestBudget).
func (c Config) runBounds() payments.RunBounds {
	return payments.RunBounds{QueueWait: c.queueWait(), Limit: c.runLimit()}
}
