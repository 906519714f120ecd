package payments

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// gateServer serves a paid endpoint through g, mapping errors to statuses
// the way httpapi does. With v1Only it drops the v2 terms header, as a v1
// server would.
func gateServer(t *testing.T, g *Gate, v1Only bool) *httptest.Server {
	t.Helper()
	writeErr := func(w http.ResponseWriter, err error) {
		var e *sandboxd.Error
		if !errors.As(err, &e) {
			http.Error(w, err.Error(), 500)
			return
		}
		var body any = map[string]string{"error": e.Message}
		if p := e.Payment; p != nil && p.Terms != nil {
			if !v1Only {
				w.Header().Set(x402.HeaderPaymentRequired, base64.StdEncoding.EncodeToString(p.Terms.V2))
			}
			body = p.Terms.V1
		}
		if e.Payment != nil {
			writeReport(t, w.Header(), e.Payment.Settlement)
		}
		status := map[sandboxd.Code]int{sandboxd.CodePayment: 402, sandboxd.CodeInvalid: 400, sandboxd.CodeUnavailable: 503}[e.Code]
		if status == 0 {
			status = 500
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(body)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := paidRequest(r.Header)
		req.ResourceURL = "http://" + r.Host + r.URL.Path
		c, err := begin(g, r.Context(), req)
		if err != nil {
			writeErr(w, err)
			return
		}
		settled, err := c.Settle(r.Context(), sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}})
		if err != nil {
			writeErr(w, err)
			return
		}
		writeReport(t, w.Header(), settled)
		w.Write([]byte(`{"stdout":"1\n"}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// writeReport sets the settlement report s (when not nil) in the header
// its payer's version reads.
func writeReport(t *testing.T, h http.Header, s *sandboxd.Settlement) {
	if s == nil {
		return
	}
	name, sr := report(t, s)
	value, err := x402.EncodeHeader(sr)
	if err != nil {
		t.Error(err)
	}
	h.Set(name, value)
}

// newLiveGate is a test gate on the real clock, as the client signs with it.
func newLiveGate(t *testing.T, s Settler) *Gate {
	t.Helper()
	g, _ := newTestGate(t, s)
	g.now = time.Now
	return g
}

func TestPay(t *testing.T) {
	ctx := context.Background()
	key := x402test.Key(t)
	payer := crypto.PubkeyToAddress(key.PublicKey).Hex()
	for _, v1Only := range []bool{false, true} {
		srv := gateServer(t, newLiveGate(t, &fakeSettler{settleTx: "0x77"}), v1Only)
		resp, err := x402.Pay(ctx, srv.Client(), key, srv.URL+"/v1/code", []byte(`{"code":"print(1)"}`), x402.DefaultPayPolicy())
		if err != nil {
			t.Fatalf("v1Only=%v: %v", v1Only, err)
		}
		if resp.StatusCode != 200 || string(resp.Body) != `{"stdout":"1\n"}` {
			t.Fatalf("answer %d %s", resp.StatusCode, resp.Body)
		}
		network := "eip155:84532"
		if v1Only {
			network = "base-sepolia"
		}
		want := x402.SettleResponse{Success: true, Transaction: "0x77", Network: network, Payer: payer}
		if resp.Settlement == nil || !reflect.DeepEqual(*resp.Settlement, want) {
			t.Fatalf("v1Only=%v: settlement %+v, want %+v", v1Only, resp.Settlement, want)
		}
		if resp.Requirements == nil || resp.Requirements.Amount != "5000" {
			t.Fatalf("requirements %+v", resp.Requirements)
		}
	}
}

func TestPayRefused(t *testing.T) {
	srv := gateServer(t, newLiveGate(t, &fakeSettler{settleErr: x402.Reject(x402.ReasonInsufficientFunds, "balance short")}), false)
	_, err := x402.Pay(context.Background(), srv.Client(), x402test.Key(t), srv.URL, []byte(`{}`), x402.DefaultPayPolicy())
	var pe *x402.PaymentRefusedError
	if !errors.As(err, &pe) {
		t.Fatalf("Pay = %v, want a *PaymentRefusedError", err)
	}
	if pe.Settlement == nil || pe.Settlement.ErrorReason != x402.ReasonInsufficientFunds || pe.Message == "" {
		t.Fatalf("refusal %+v", pe)
	}
}

func TestPayFree(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("free")) }))
	defer srv.Close()
	resp, err := x402.Pay(context.Background(), srv.Client(), x402test.Key(t), srv.URL, nil, x402.DefaultPayPolicy())
	if err != nil || string(resp.Body) != "free" || resp.Settlement != nil || resp.Requirements != nil {
		t.Fatalf("Pay = %+v, %v", resp, err)
	}
}

func TestPayNoTerms(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(402)
		w.Write([]byte(`{"error":"pay"}`))
	}))
	defer srv.Close()
	if _, err := x402.Pay(context.Background(), srv.Client(), x402test.Key(t), srv.URL, nil, x402.DefaultPayPolicy()); err == nil {
		t.Fatal("Pay succeeded without terms")
	}
}
