package main

import (
	"fmt"
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
// that bound a request, and checks that the write deadline covers them.
func (c Config) httpTimeouts() (httpapi.Timeouts, error) {
	budget := c.requestBudget()
	t := httpapi.DefaultTimeouts(budget)
	if err := t.Check(budget); err != nil {
		return t, fmt.Errorf("config: runtime.queue_wait, runtime.timeout, payments.check_wait, payments.verify_timeout, "+
			"payments.settle_timeout: %w", err)
	}
	return t, nil
}
