package ingress

import (
	"fmt"
	"net/http"
	"time"

	"sandboxd"
)

// bodyClock cuts off a body that arrives slower than Limits.MinBodyRate,
// after BodyGrace, by setting the connection's read deadline before each read
// to the moment the body falls behind: start + grace + time waited for
// room + bytes read / rate. So a body may stall for the grace at any
// point as long as it has kept up on average, a body that arrives fast
// and then stops is cut as soon as its credit runs out, and no timer runs
// per request. The deadline never passes the request's ReadTimeout.
type bodyClock struct {
	rc    *http.ResponseController
	start time.Time
	// end is start + ReadTimeout, or zero for none.
	end    time.Time
	rate   int64
	grace  time.Duration
	waited time.Duration
	// off is set when the connection takes no deadlines (a test's
	// recorder) or none is asked for.
	off bool
}

// newBodyClock returns the clock of a body about to be read through w
// within l.
func newBodyClock(w http.ResponseWriter, l Limits) *bodyClock {
	c := &bodyClock{rc: http.NewResponseController(w), start: time.Now(), rate: l.MinBodyRate, grace: l.BodyGrace}
	if l.ReadTimeout > 0 {
		c.end = c.start.Add(l.ReadTimeout)
	}
	c.off = c.rate <= 0 && c.end.IsZero()
	return c
}

// arm sets the read deadline for a body that has got bytes so far.
func (c *bodyClock) arm(got int64) {
	if c.off {
		return
	}
	d := c.end
	if c.rate > 0 {
		behind := c.start.Add(c.waited + c.grace + time.Duration(float64(got)/float64(c.rate)*float64(time.Second)))
		if d.IsZero() || behind.Before(d) {
			d = behind
		}
	}
	if c.rc.SetReadDeadline(d) != nil {
		c.off = true // the connection takes no deadline: nothing to restore either
	}
}

// disarm gives the connection back the request's own read deadline, so
// what the server reads after the body (the next request, a hang-up) is
// bounded as before and not cut by the body's last deadline.
func (c *bodyClock) disarm() {
	if !c.off {
		_ = c.rc.SetReadDeadline(c.end)
	}
}

// tooSlow is the error of a body cut off by its deadline.
func (c *bodyClock) tooSlow(cause error) error {
	msg := "the request body was not read within the read timeout"
	if c.rate > 0 {
		msg = fmt.Sprintf("the request body arrived too slowly: after the first %v it must average at least %d bytes a second", c.grace, c.rate)
	}
	if !c.end.IsZero() {
		msg += fmt.Sprintf(", and the whole request must arrive within %v", c.end.Sub(c.start))
	}
	return sandboxd.Wrap(sandboxd.CodeTooSlow, "httpapi.read", cause, msg+"; send it again over a faster link, or make it smaller")
}

// count counts r's body among those its client is reading, and returns
// the call that stops counting it. A client already reading
// l.MaxBodiesPerClient bodies is CodeBusy; 0 counts nothing.
func (b *Bodies) count(r *http.Request, l Limits) (func(), error) {
	if l.MaxBodiesPerClient <= 0 {
		return func() {}, nil
	}
	a, ok := l.Clients.Addr(r)
	if !ok {
		return func() {}, nil
	}
	key := Key(a)
	if !b.reading.Take(key, l.MaxBodiesPerClient) {
		return nil, &sandboxd.Error{Code: sandboxd.CodeBusy, Op: "httpapi.read", RetryAfter: bodyRetry,
			Message: fmt.Sprintf("your address is already sending %d request bodies at once, the most one client may; "+
				"finish those first, then retry after the time in Retry-After", l.MaxBodiesPerClient)}
	}
	return func() { b.reading.Give(key) }, nil
}
