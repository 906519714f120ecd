package payments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd"
	"sandboxd/payments/internal/remote"
	"sandboxd/x402"
)

// maxFacilitatorBody bounds a facilitator's answer.
const maxFacilitatorBody = 1 << 20

// facilitatorConfig configures a facilitatorSettler.
type facilitatorConfig struct {
	// URL is the facilitator's base URL; /verify and /settle are appended.
	URL string
	// HTTPClient makes the calls; nil means clients with no overall
	// timeout (each call is bounded by the timeouts below), the one for
	// /settle opening a fresh connection for each call.
	HTTPClient *http.Client
	// VerifyTimeout bounds /verify; zero means DefaultVerifyTimeout.
	VerifyTimeout time.Duration
	// SettleTimeout bounds /settle; zero means DefaultSettleTimeout.
	SettleTimeout time.Duration
}

// facilitatorSettler checks and settles payments through an x402
// facilitator's /verify and /settle. It cannot tell whether a nonce was
// used (NonceUsed returns errNonceStateUnknown).
//
// Its error messages, which callers see, never name the facilitator's URL;
// their causes, for the log, do.
type facilitatorSettler struct {
	url                          string
	client                       *http.Client
	settleClient                 *http.Client
	verifyTimeout, settleTimeout time.Duration
}

var _ Settler = (*facilitatorSettler)(nil)

// newFacilitatorSettler returns a settler calling the facilitator of c.
func newFacilitatorSettler(c facilitatorConfig) *facilitatorSettler {
	f := &facilitatorSettler{url: strings.TrimRight(c.URL, "/"), client: c.HTTPClient,
		verifyTimeout: c.VerifyTimeout, settleTimeout: c.SettleTimeout}
	f.settleClient = f.client
	if f.client == nil {
		// On a reused keep-alive connection the server may have closed
		// (Node's default idle timeout is 5 s, shorter than many runs), a
		// failed /settle could not tell "never received" from "received";
		// on a fresh one, a refused connection means it never left.
		t := remote.Transport()
		t.DisableKeepAlives = true
		f.client, f.settleClient = &http.Client{Transport: remote.Transport()}, &http.Client{Transport: t}
	}
	if f.verifyTimeout <= 0 {
		f.verifyTimeout = DefaultVerifyTimeout
	}
	if f.settleTimeout <= 0 {
		f.settleTimeout = DefaultSettleTimeout
	}
	return f
}

// facilitatorRequest is the body of /verify and /settle: PaymentPayload is
// an x402.PaymentPayload (exact) or a channelPayload.
type facilitatorRequest struct {
	X402Version         int               `json:"x402Version"`
	PaymentPayload      any               `json:"paymentPayload"`
	PaymentRequirements x402.Requirements `json:"paymentRequirements"`
}

// facilitatorAnswer holds the fields of a /verify or /settle answer.
type facilitatorAnswer struct {
	IsValid        bool   `json:"isValid"`
	InvalidReason  string `json:"invalidReason"`
	InvalidMessage string `json:"invalidMessage"`
	Success        bool   `json:"success"`
	ErrorReason    string `json:"errorReason"`
	ErrorMessage   string `json:"errorMessage"`
	Transaction    string `json:"transaction"`
}

// Check asks the facilitator's /verify whether p would settle now.
func (f *facilitatorSettler) Check(ctx context.Context, p *x402.Payment) error {
	return f.verify(ctx, facilitatorPayload(p), p.Requirements)
}

// verify asks /verify about payload under req.
func (f *facilitatorSettler) verify(ctx context.Context, payload any, req x402.Requirements) error {
	var a facilitatorAnswer
	status, err := f.post(ctx, "/verify", f.verifyTimeout, payload, req, &a)
	if err != nil && staleConnection(err) {
		// A kept-alive connection the facilitator had closed: /verify
		// changes nothing, so asking again on a fresh one is safe.
		a = facilitatorAnswer{}
		status, err = f.post(ctx, "/verify", f.verifyTimeout, payload, req, &a)
	}
	if err != nil {
		return err
	}
	if a.IsValid {
		return nil
	}
	if a.InvalidReason == "" {
		return f.unavailable("/verify", true, fmt.Errorf("status %d, isValid false, no invalidReason", status))
	}
	return &x402.RejectError{Reason: a.InvalidReason, Check: "the facilitator refused the payment", Err: facilitatorSaid(a.InvalidMessage)}
}

// Settle asks the facilitator's /settle to collect p. It is never retried:
// a retry could collect twice. Only a refused connection wraps
// remote.ErrNotSent; once the request may have reached the facilitator (a
// timeout, a 5xx, an answer that does not decode), whether it settled is
// unknown.
func (f *facilitatorSettler) Settle(ctx context.Context, p *x402.Payment) (string, error) {
	return f.settle(ctx, facilitatorPayload(p), p.Requirements)
}

// settle asks /settle to collect payload under req (see Settle).
func (f *facilitatorSettler) settle(ctx context.Context, payload any, req x402.Requirements) (string, error) {
	var a facilitatorAnswer
	status, err := f.post(ctx, "/settle", f.settleTimeout, payload, req, &a)
	if err != nil {
		return "", err
	}
	if a.Success {
		return a.Transaction, nil
	}
	if a.ErrorReason == "" {
		return a.Transaction, f.unavailable("/settle", true, fmt.Errorf("status %d, success false, no errorReason", status))
	}
	return a.Transaction, &x402.RejectError{Reason: a.ErrorReason, Check: "the facilitator could not settle the payment", Err: facilitatorSaid(a.ErrorMessage)}
}

// NonceUsed returns errNonceStateUnknown: a facilitator has no query for
// it. Recover marks a settlement in flight at a crash failed.
func (f *facilitatorSettler) NonceUsed(context.Context, common.Address, [32]byte) (bool, error) {
	return false, errNonceStateUnknown
}

// post sends payload under terms to the facilitator's path and decodes the answer into out.
// A facilitator answers a refusal with 200 or 4xx and a JSON body; only an
// answer that does not decode is an outage.
func (f *facilitatorSettler) post(ctx context.Context, path string, timeout time.Duration, payload any, terms x402.Requirements, out *facilitatorAnswer) (int, error) {
	body, err := json.Marshal(facilitatorRequest{X402Version: 2, PaymentPayload: payload, PaymentRequirements: terms})
	if err != nil {
		return 0, sandboxd.Wrap(sandboxd.CodeInternal, "payments.facilitator", err, "cannot encode the facilitator request")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url+path, bytes.NewReader(body))
	if err != nil {
		return 0, f.unavailable(path, false, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	client := f.client
	if path == "/settle" {
		client = f.settleClient
	}
	resp, err := client.Do(req)
	if err != nil {
		sent := !remote.DialFailed(err)
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s: %w", timeout, err)
		}
		return 0, f.unavailable(path, sent, err)
	}
	defer resp.Body.Close()
	raw, err := remote.ReadAnswer(resp.Body, maxFacilitatorBody)
	if err != nil {
		return resp.StatusCode, f.unavailable(path, true, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return resp.StatusCode, f.unavailable(path, true, fmt.Errorf("status %d, body %q", resp.StatusCode, snippet(raw)))
	}
	if resp.StatusCode >= 500 && !out.IsValid && !out.Success && out.InvalidReason == "" && out.ErrorReason == "" {
		return resp.StatusCode, f.unavailable(path, true, fmt.Errorf("status %d, body %q", resp.StatusCode, snippet(raw)))
	}
	return resp.StatusCode, nil
}

// facilitatorPayload is the payment as the facilitator gets it, built
// only from what this service verified and quoted, never from the payer's
// copies or bytes (another JSON reader could read those differently, and a
// directory builds the operator's public listing from what reaches the
// facilitator): the terms entry quoted (which the payer's accepted was
// checked equal to), the service's own resource and declared extensions,
// and the authorization re-encoded from its parsed values. A v1 payer's
// signed authorization goes into a v2 payload the same way (the signature
// covers only the authorization's values, unchanged).
func facilitatorPayload(p *x402.Payment) x402.PaymentPayload {
	resource := p.Quoted.Resource
	return x402.PaymentPayload{X402Version: 2, Resource: &resource, Accepted: p.Requirements,
		Payload: p.Transfer.Exact(), Extensions: p.Quoted.Extensions}
}

// unavailable is the error of a failed call to path; sent says whether the
// request may have reached the facilitator. For /settle the message says
// what that means for the payment, and an unsent one wraps remote.ErrNotSent.
// The message reaches callers, so it names the facilitator's path but not
// its URL; the cause, for the log, has the URL.
func (f *facilitatorSettler) unavailable(path string, sent bool, err error) error {
	err = fmt.Errorf("%s%s: %w", f.url, path, err)
	switch {
	case path != "/settle":
		return sandboxd.Wrap(sandboxd.CodeUnavailable, "payments.facilitator", err, fmt.Sprintf(
			"the payment facilitator's %s cannot be reached or gave no usable answer; nothing was charged, try again later", path))
	case !sent:
		return sandboxd.Wrap(sandboxd.CodeUnavailable, "payments.facilitator", fmt.Errorf("%w: %w", remote.ErrNotSent, err),
			"the payment facilitator's /settle cannot be reached; nothing was charged, so the same payment may be sent again later")
	}
	return sandboxd.Wrap(sandboxd.CodeUnavailable, "payments.facilitator", err,
		"the payment facilitator's /settle gave no usable answer, so whether it settled is unknown "+
			"and this payment cannot be used again")
}

// staleConnection reports whether err is a connection closed under a
// request, as happens on a reused keep-alive connection.
func staleConnection(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// facilitatorSaid is a facilitator's own explanation of a refusal, kept
// as the cause (for the log) and never shown to callers: it is free text
// from another service's stack (viem's errors name RPC URLs, which may hold
// API keys). The x402 reason code says what the payer needs.
func facilitatorSaid(msg string) error {
	if msg == "" {
		return nil
	}
	return fmt.Errorf("the facilitator said: %s", snippet([]byte(msg)))
}

func snippet(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
