package payments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/big"

	"sandboxd"
	"sandboxd/x402"
)

// quote is what the gate quotes: the terms entry and the description of the
// paid resource.
type quote struct {
	req x402.Requirements
	// batch is the batch-settlement entry offered after req, nil when
	// channels are not offered.
	batch       *x402.Requirements
	description string
}

// paymentError returns a CodePayment error carrying the terms: the v2
// and v1 documents, encoded here once (see sandboxd.PaymentTerms).
func (q quote) paymentError(op, resourceURL, message string, cause error) *sandboxd.Error {
	return q.termsError(op, resourceURL, message, cause, q.offers()...)
}

// offers are the entries quoted after req: the batch entry, if any.
func (q quote) offers() []x402.Requirements {
	if q.batch == nil {
		return nil
	}
	return []x402.Requirements{*q.batch}
}

// termsError is paymentError quoting req and then more.
func (q quote) termsError(op, resourceURL, message string, cause error, more ...x402.Requirements) *sandboxd.Error {
	v2, v1 := x402.Terms(q.req, q.description, resourceURL, message, more...)
	terms := &sandboxd.PaymentTerms{}
	terms.V2, _ = json.Marshal(v2)
	terms.V1 = bodyJSON(v1)
	return &sandboxd.Error{Code: sandboxd.CodePayment, Op: op, Message: message, Err: cause,
		Payment: &sandboxd.PaymentDetails{Terms: terms}}
}

// bodyJSON encodes v as httpapi encodes an answer body: compact, without
// HTML escaping. The terms are strings and numbers, which always encode
// (nil, answered as the default body, if they did not).
func bodyJSON(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// priceText says the price for a person, e.g. "0.005 USDC on eip155:84532".
func (q quote) priceText() string {
	amount, _ := new(big.Int).SetString(q.req.Amount, 10)
	return x402.FormatPrice(amount) + " " + q.req.Extra.Name + " on " + q.req.Network
}

// refusal turns a verification or check failure into the gate's error: a
// *x402.RejectError becomes CodePayment with the terms; a *sandboxd.Error
// (unavailable) and a context error pass through.
func (q quote) refusal(op, resourceURL string, err error) error {
	var r *x402.RejectError
	if errors.As(err, &r) {
		return q.paymentError(op, resourceURL, "payment refused: "+r.Check+" ("+r.Reason+")", err)
	}
	var se *sandboxd.Error
	if errors.As(err, &se) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "the payment could not be checked; try again later")
}

// quoted is what the gate quoted for r besides the terms entry: its own
// resource, and the extensions r declares, encoded once here. An extension
// that does not encode is left out (it was not quoted either).
func (q quote) quoted(r sandboxd.PaymentRequest) x402.Quoted {
	out := x402.Quoted{Resource: x402.NewResource(r.ResourceURL, q.description)}
	for name, v := range r.Extensions {
		raw, err := json.Marshal(v)
		if err != nil {
			continue
		}
		if out.Extensions == nil {
			out.Extensions = map[string]json.RawMessage{}
		}
		out.Extensions[name] = raw
	}
	return out
}

// channelTerms answers a channel payment's refusals with q's terms for
// one resource (channels.Terms).
type channelTerms struct {
	q           quote
	resourceURL string
}

// Refuse is q's refusal quoting both entries.
func (t channelTerms) Refuse(op, message string, cause error) *sandboxd.Error {
	return t.q.paymentError(op, t.resourceURL, message, cause)
}

// Corrective quotes entry in place of the batch entry, with code as the
// terms' error: the official client acts on the bare code only.
func (t channelTerms) Corrective(op, code string, entry x402.Requirements, cause error) *sandboxd.Error {
	return t.q.termsError(op, t.resourceURL, code, cause, entry)
}
