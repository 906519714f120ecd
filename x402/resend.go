package x402

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The bounds of Resend.
const (
	// DefaultRetries is how many times a paying client sends a paid request
	// again by default.
	DefaultRetries = 3
	// MaxRetries is the most Resend.Retries may be.
	MaxRetries = 10
	// DefaultBackoff is the first wait before sending again when the
	// server named none; it doubles with each resend.
	DefaultBackoff = time.Second
	// maxWait caps a wait before sending again: a server's Retry-After,
	// and the backoff doubled.
	maxWait = 10 * time.Second
	// pendingWait is the wait after a 202 (a settlement pending): the
	// service resolves it from the chain, which takes blocks.
	pendingWait = 15 * time.Second
)

// Resend says which payment id a paid request carries and how it is sent
// again when its answer is lost: the very same request, the same signed
// payment and id, so that a service that kept the answer gives it back and
// one that never got the request takes the payment once. Its zero value
// sends no id and never sends again.
type Resend struct {
	// PaymentID is the payment-identifier id sent with a payment when the
	// terms declare the extension; "" sends none.
	PaymentID string
	// Retries is how many times at most a paid request is sent again
	// (0 never, MaxRetries at most).
	Retries int
	// Backoff is the first wait before sending again when the server named
	// none (DefaultBackoff when zero); it doubles with each resend.
	Backoff time.Duration
	// Note, when set, is told what the resends did, a sentence at a time.
	Note func(string)
}

// PaidRequest is a request that carries a payment, as Resend.Send sends it.
type PaidRequest struct {
	// Method, URL and Body (JSON, or nil) are the request's.
	Method, URL string
	Body        []byte
	// Header is the payment header's name, Value its value.
	Header, Value string
	// PaymentID is the payment id the payment carries, "" when none.
	PaymentID string
	// Renew, when set, signs a new payment with the same id, for a resend
	// refused because the payment expired on the way (the first request
	// never arrived); nil never renews.
	Renew func() (string, error)
}

// Send sends req and, when its answer is lost, sends it again, the same
// header each time, up to r.Retries times, and returns the last answer or
// error. An answer is lost on a transport error once the request may have
// left (a reset, an EOF, a body cut short, a timeout), and on a 202 (the
// settlement pending), a 409 with Retry-After (the first request still
// answered), 429, 502, 503 and 504. It waits Retry-After, else 15 s after
// a 202 and r.Backoff doubled with each resend after the others (at most
// 10 s either way), and never past ctx's deadline. A 402 refusing a
// resend because its payment expired is renewed once (req.Renew); any
// other answer is the last. Each resend is noted; so is req.PaymentID when
// the answer stays lost, for the caller to ask again with it.
func (r Resend) Send(ctx context.Context, hc *http.Client, req PaidRequest) (*PaidResponse, error) {
	retries := min(r.Retries, MaxRetries)
	renewed := false
	for n := 0; ; n++ {
		resp, err := Send(ctx, hc, req.Method, req.URL, req.Body, req.Header, req.Value)
		if resp != nil {
			resp.Resent = n
		}
		if n > 0 && n < retries && !renewed && req.Renew != nil && expired(resp) {
			renewed = true
			if req.Value, err = req.Renew(); err != nil {
				return nil, err
			}
			r.note("the payment expired before the service got it; signing a new one with the same payment id %s "+
				"(%d of %d)", req.PaymentID, n+1, retries)
			continue
		}
		why, wait := r.lost(ctx, resp, err, n)
		if why == "" {
			if err != nil && ctx.Err() != nil {
				r.giveUp(fmt.Sprintf("no answer came (%v)", err), n, retries, req.PaymentID)
			}
			return resp, err
		}
		if n >= retries || !timeFor(ctx, wait) {
			r.giveUp(why, n, retries, req.PaymentID)
			return resp, err
		}
		r.note("%s; asking again with the same payment in %s (%d of %d)", why, wait, n+1, retries)
		if err := sleep(ctx, wait); err != nil {
			r.giveUp(why, n, retries, req.PaymentID)
			return nil, fmt.Errorf("stopped waiting to ask again for the answer: %w", err)
		}
	}
}

// lost says why the answer to the nth send (resp or err) is to be asked
// for again, and how long to wait first; "" when it is the last answer.
func (r Resend) lost(ctx context.Context, resp *PaidResponse, err error, n int) (string, time.Duration) {
	backoff := r.Backoff
	if backoff <= 0 {
		backoff = DefaultBackoff
	}
	backoff = min(backoff<<min(n, MaxRetries), maxWait)
	if err != nil {
		if !dropped(ctx, err) {
			return "", 0
		}
		return fmt.Sprintf("the answer was lost (%v)", err), backoff
	}
	after, named := retryAfter(resp.Header.Get("Retry-After"))
	if !named {
		after = backoff
	}
	switch resp.StatusCode {
	case http.StatusAccepted:
		if !named {
			after = pendingWait
		}
		return "the settlement is pending (202)", after
	case http.StatusConflict:
		if !named {
			return "", 0
		}
		return "the first request with this payment is still being answered (409)", after
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return fmt.Sprintf("the service answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode)), after
	}
	return "", 0
}

// dropped reports whether err, from sending a request, says its answer
// was lost on the way rather than that the request could not be made or
// ctx ended.
func dropped(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) || (errors.As(err, &ne) && ne.Timeout())
}

// expired reports whether resp is a 402 refusing a payment that expired.
func expired(resp *PaidResponse) bool {
	if resp == nil || resp.StatusCode != http.StatusPaymentRequired {
		return false
	}
	if strings.Contains(Refused(resp).Message, ReasonValidBefore) {
		return true
	}
	q, err := ReadTerms(resp)
	return err == nil && strings.Contains(q.Error, ReasonValidBefore)
}

// retryAfter reads a Retry-After value, in seconds or an HTTP date,
// capped at maxWait; named is false when there is none to read.
func retryAfter(v string) (d time.Duration, named bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		d = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = max(time.Until(t), 0)
	} else {
		return 0, false
	}
	return min(d, maxWait), true
}

// timeFor reports whether ctx leaves time to wait d and send again.
func timeFor(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) > d
}

// giveUp notes that the answer stays lost after n resends of the retries
// allowed, and the payment id to ask for it again with.
func (r Resend) giveUp(why string, n, retries int, id string) {
	msg := fmt.Sprintf("%s; not asking again (%d of %d resends made)", why, n, retries)
	if id != "" {
		msg += fmt.Sprintf(". This payment's id is %s: the same request with --payment-id %s (with the same payer "+
			"key) fetches the answer from a service that kept it, without paying twice", id, id)
	}
	r.note("%s", msg)
}

// note tells r.Note a sentence, when there is one to tell.
func (r Resend) note(format string, args ...any) {
	if r.Note != nil {
		r.Note(fmt.Sprintf(format, args...))
	}
}

// sleep waits d or until ctx ends, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
