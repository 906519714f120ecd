package payments

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// facilitatorAnswer kinds the scripted facilitator gives.
const (
	answerOK       = "ok"
	answerSlow     = "slow"      // no answer until the caller gives up
	answerGarbage  = "garbage"   // 200 with a body that is not JSON
	answerHTML502  = "html 502"  // a proxy's error page
	answerJSON500  = "json 500"  // a 500 with JSON that is no answer
	answerNoReason = "no reason" // 200, not valid / not a success, no reason
)

// scriptedFacilitator answers /verify and /settle as told, and counts the
// /settle requests it received.
type scriptedFacilitator struct {
	mu             sync.Mutex
	verify, settle string
	settles        int
}

func (f *scriptedFacilitator) set(verify, settle string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.verify, f.settle = verify, settle
}

func (f *scriptedFacilitator) settleCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.settles
}

func (f *scriptedFacilitator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	f.mu.Lock()
	answer, ok := f.verify, `{"isValid":true,"payer":"0x1"}`
	if r.URL.Path == "/settle" {
		f.settles++
		answer, ok = f.settle, `{"success":true,"transaction":"0xfeed","network":"eip155:84532","payer":"0x1"}`
	}
	f.mu.Unlock()
	switch answer {
	case answerOK:
		io.WriteString(w, ok)
	case answerSlow:
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	case answerGarbage:
		io.WriteString(w, "OK")
	case answerHTML502:
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html>502 Bad Gateway</html>")
	case answerJSON500:
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":"internal server error"}`)
	case answerNoReason:
		io.WriteString(w, `{"isValid":false,"success":false}`)
	}
}

// facilitatorGate returns a gate settling through a scripted facilitator
// with 300 ms timeouts.
func facilitatorGate(t *testing.T) (*Gate, *ledger.SQL, *scriptedFacilitator, *flakyServer) {
	t.Helper()
	fac := &scriptedFacilitator{verify: answerOK, settle: answerOK}
	srv := newFlakyServer(t, fac)
	s := newFacilitatorSettler(facilitatorConfig{URL: srv.URL(), VerifyTimeout: faultRPCTimeout, SettleTimeout: faultRPCTimeout})
	g, l := newTestGate(t, s)
	return g, l, fac, srv
}

// TestFacilitatorFaultsAtStart: the gate starts with its facilitator down
// (nothing is asked of it before the first payment); the first paid call is
// refused as unavailable, naming the URL, and goes through once it is up.
func TestFacilitatorFaultsAtStart(t *testing.T) {
	ctx := context.Background()
	fac := &scriptedFacilitator{verify: answerOK, settle: answerOK}
	srv := newFlakyServer(t, fac)
	srv.Down()
	cfg := testConfig(t)
	cfg.FacilitatorURL = srv.URL()
	g, err := NewGate(ctx, cfg, RunBounds{}, nil)
	if err != nil {
		t.Fatalf("NewGate with the facilitator down: %v", err)
	}
	defer g.Close()
	g.now = func() time.Time { return x402test.Now }
	h := x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), nil))
	_, err = begin(g, ctx, paidRequest(h))
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !namesURLInCauseOnly(err, srv.URL(), "/verify") {
		t.Fatalf("Begin = %v, want CodeUnavailable naming %s/verify", err, srv.URL())
	}
	srv.Up()
	c, err := begin(g, ctx, paidRequest(h))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); err != nil {
		t.Fatal(err)
	}
}

// TestFacilitatorFaultsAtCheck: a /verify that is closed, slow, garbled or
// failing refuses the call as unavailable, naming the URL; nothing is
// reserved and the same payment goes through afterwards.
func TestFacilitatorFaultsAtCheck(t *testing.T) {
	ctx := context.Background()
	for _, answer := range []string{"closed port", answerSlow, answerGarbage, answerHTML502, answerJSON500, answerNoReason} {
		t.Run(answer, func(t *testing.T) {
			t.Parallel()
			g, l, fac, srv := facilitatorGate(t)
			key := x402test.Key(t)
			pp := x402test.Payload(t, key, g.Requirements(), nil)
			h := x402test.Header(t, x402.HeaderPaymentSignature, pp)
			if answer == "closed port" {
				srv.Down()
			} else {
				fac.set(answer, answerOK)
			}
			_, err := begin(g, ctx, paidRequest(h))
			if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !namesURLInCauseOnly(err, srv.URL(), "/verify") {
				t.Fatalf("Begin = %v, want CodeUnavailable naming %s/verify", err, srv.URL())
			}
			p := x402test.Decode(t, h)
			if _, err := l.Get(ctx, pp.Payload.Authorization.From, p.Exact.Authorization.Nonce); err == nil {
				t.Fatal("a payment was reserved though its check failed")
			}
			if answer == "closed port" {
				srv.Up()
			}
			fac.set(answerOK, answerOK)
			c, err := begin(g, ctx, paidRequest(h))
			if err != nil {
				t.Fatalf("the same payment afterwards: %v", err)
			}
			if _, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); err != nil || fac.settleCount() != 1 {
				t.Fatalf("Settle = %v with %d /settle calls; want one", err, fac.settleCount())
			}
		})
	}
}

// TestFacilitatorFaultsAtSettle: whatever /settle does wrong, no answer is
// delivered, the error names the URL, and nobody is charged twice:
//   - connection refused: /settle never got the payment, so it is released
//     and a retry of the same payment is settled exactly once;
//   - slow past SettleTimeout, garbled, 5xx, no errorReason: /settle got the
//     payment and may have settled it, so it is pending (202, never "pay
//     again"), a retry is refused without a second /settle, and the
//     resolver, which cannot ask a facilitator, marks it failed.
func TestFacilitatorFaultsAtSettle(t *testing.T) {
	ctx := context.Background()
	for _, answer := range []string{"closed port", answerSlow, answerGarbage, answerHTML502, answerJSON500, answerNoReason} {
		t.Run(answer, func(t *testing.T) {
			t.Parallel()
			g, l, fac, srv := facilitatorGate(t)
			key := x402test.Key(t)
			pp := x402test.Payload(t, key, g.Requirements(), nil)
			h := x402test.Header(t, x402.HeaderPaymentSignature, pp)
			entry := ledger.Entry{Payer: pp.Payload.Authorization.From, Nonce: pp.Payload.Authorization.Nonce}
			c, err := begin(g, ctx, paidRequest(h))
			if err != nil {
				t.Fatal(err)
			}
			if answer == "closed port" {
				srv.Down()
			} else {
				fac.set(answerOK, answer)
			}
			start := time.Now()
			out, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}})
			if d := time.Since(start); d > 5*faultRPCTimeout {
				t.Fatalf("Settle took %s; SettleTimeout is %s", d, faultRPCTimeout)
			}
			if answer == "closed port" {
				srv.Up()
			}
			fac.set(answerOK, answerOK)

			if answer == "closed port" {
				ledgertest.WantStatus(t, l, entry, ledger.StatusReleased)
				if out != nil {
					t.Fatalf("settlement %+v with a failed settlement: the answer would be delivered", out)
				}
				e := wantPaymentError(t, err, "the answer is withheld", "/settle")
				if strings.Contains(e.Message, srv.URL()) {
					t.Errorf("the message %q names the facilitator's URL", e.Message)
				}
				if sr := errReport(t, e); sr.Success || sr.ErrorReason != x402.ReasonUnexpectedSettle {
					t.Fatalf("settle response %+v", sr)
				}
				if !strings.Contains(e.Message, "nothing was charged") {
					t.Fatalf("message %q does not say nothing was charged", e.Message)
				}
				retry, err := begin(g, ctx, paidRequest(h))
				if err != nil {
					t.Fatalf("retry of a payment /settle never got: %v", err)
				}
				if _, err := retry.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{}}); err != nil {
					t.Fatal(err)
				}
				ledgertest.WantStatus(t, l, entry, ledger.StatusSettled)
				if n := fac.settleCount(); n != 1 {
					t.Fatalf("/settle got %d requests, want 1", n)
				}
				return
			}
			wantPending(t, l, entry, out, err, "")
			_, err = begin(g, ctx, paidRequest(h))
			wantPaymentError(t, err, "already used")
			if rep, err := g.ResolvePending(ctx); err != nil || rep.Failed != 1 {
				t.Fatalf("ResolvePending = %+v, %v; want the pending row failed (a facilitator cannot tell)", rep, err)
			}
			if row := ledgertest.WantStatus(t, l, entry, ledger.StatusFailed); row.Reason != ledger.ReasonUnknownAfterRestart {
				t.Fatalf("row %+v", row)
			}
			_, err = begin(g, ctx, paidRequest(h))
			wantPaymentError(t, err, "already used")
			if n := fac.settleCount(); n != 1 {
				t.Fatalf("/settle got %d requests, want 1", n)
			}
		})
	}
}
