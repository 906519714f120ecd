package main

import (
	"time"

	"sandboxd/httpapi"
)

// runOverhead bounds what a run takes beyond runtime.timeout: creating,
// starting and removing its container on a loaded host.
const runOverhead = 30 * time.Second

// runLimit bounds a run detached from its caller (httpapi.Server.RunLimit).
func (rt RuntimeConfig) runLimit() time.Duration { return rt.Timeout + runOverhead }

// requestBudget is the longest a POST /v1/code handler may take once its
// body is read: runtime.queue_wait and the run, and, with payments on, the
// payment check and the settlement (payments.Config.RequestBudget).
func (c Config) requestBudget() time.Duration {
	b := c.Runtime.QueueWait + c.Runtime.runLimit()
	if c.Payments.Enabled {
		b += c.Payments.RequestBudget()
	}
	return b
}

// httpTimeouts returns the HTTP server's timeouts, derived from the keys
// that bound a request: the write deadline covers them whatever they are.
func (c Config) httpTimeouts() httpapi.Timeouts {
	return httpapi.DefaultTimeouts(c.requestBudget())
}
