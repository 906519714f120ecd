package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"sandboxd"
	"sandboxd/httpapi/wire"
	"sandboxd/payments"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// acceptingFacilitator verifies and settles every payment.
func acceptingFacilitator(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/settle" {
			fmt.Fprintf(w, `{"success":true,"transaction":"0x%s"}`, strings.Repeat("cd", 32))
			return
		}
		fmt.Fprint(w, `{"isValid":true}`)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// sendPaid sends a request with the payment header h to the server at url.
func sendPaid(t *testing.T, method, url, body string, h http.Header) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

// TestSessionPaymentsWithTheRealGate: the open quotes the open price with
// the sessions URL as the resource; a paid open and call are answered;
// the same payment sent again buys nothing; a call paid by another
// wallet is 403 and its payment is not spent (it still buys a run).
func TestSessionPaymentsWithTheRealGate(t *testing.T) {
	cfg := payments.Config{Network: "eip155:84532", Asset: x402test.Asset, AssetName: "USDC", AssetVersion: "2", Price: "0.005",
		PayTo: x402test.PayTo, MaxTimeoutSeconds: 120, Settlement: payments.SettleFacilitator,
		FacilitatorURL: acceptingFacilitator(t).URL, Ledger: filepath.Join(t.TempDir(), "ledger.db")}
	gate, err := payments.NewGate(context.Background(), cfg, payments.RunBounds{QueueWait: 0, Limit: 10e9}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gate.Close() })
	srv := newSessionServer(t, &fakeSessionEngine{}, nil, sessionsConfig())
	srv.Gate = gate
	srv.Runner = &fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusOK}}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	status, h, _ := sendPaid(t, "POST", ts.URL+"/v1/sessions", "", nil)
	raw, _ := base64.StdEncoding.DecodeString(h.Get(x402.HeaderPaymentRequired))
	var terms struct {
		Resource   struct{ URL string }      `json:"resource"`
		Accepts    []struct{ Amount string } `json:"accepts"`
		Extensions map[string]any            `json:"extensions"`
	}
	if status != 402 || json.Unmarshal(raw, &terms) != nil || len(terms.Accepts) != 1 || terms.Accepts[0].Amount != "10000" ||
		terms.Resource.URL != ts.URL+"/v1/sessions" || terms.Extensions[bazaarKey] == nil {
		t.Fatalf("unpaid open: %d, terms %s", status, raw)
	}
	owner, other := x402test.Key(t), x402test.Key(t)
	openPrice := gate.RequirementsOf(sandboxd.PaymentRequest{Price: "0.01"})
	status, _, body := sendPaid(t, "POST", ts.URL+"/v1/sessions", "", signedHeader(t, owner, openPrice))
	var open wire.SessionResponse
	if status != 201 || json.Unmarshal([]byte(body), &open) != nil {
		t.Fatalf("paid open: %d %s", status, body)
	}
	if status, _, body := sendPaid(t, "POST", ts.URL+"/v1/sessions", "", signedHeader(t, owner, gate.Requirements())); status != 402 {
		t.Fatalf("an open paid at the run's lower price: %d %s", status, body)
	}
	codeURL := ts.URL + "/v1/sessions/" + open.SessionID + "/code"
	paid := signedHeader(t, owner, gate.Requirements())
	if status, _, body := sendPaid(t, "POST", codeURL, `{"code":"x"}`, paid); status != 200 {
		t.Fatalf("paid call: %d %s", status, body)
	}
	if status, _, body := sendPaid(t, "POST", codeURL, `{"code":"x"}`, paid); status != 402 || !strings.Contains(body, "already used") {
		t.Fatalf("the same payment again: %d %s", status, body)
	}
	theirs := signedHeader(t, other, gate.Requirements())
	if status, _, body := sendPaid(t, "POST", codeURL, `{"code":"x"}`, theirs); status != 403 {
		t.Fatalf("a call paid by another wallet: %d %s", status, body)
	}
	if status, _, body := sendPaid(t, "POST", ts.URL+"/v1/code", `{"code":"x"}`, theirs); status != 200 {
		t.Fatalf("the refused wallet's payment was spent: /v1/code answered %d %s", status, body)
	}
}
