package interop

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// clientTimeout bounds one run of test/interop/client.mjs.
const clientTimeout = 120 * time.Second

var txHash = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)

// termsResult is what client.mjs prints for the terms scenario. It and settleResponse
// spell the wire shapes from x402.md rather than reuse sandboxd/x402's types on purpose:
// decoded with the server's own types, a misnamed field would pass on both sides.
type termsResult struct {
	Status             int    `json:"status"`
	HasPaymentRequired bool   `json:"hasPaymentRequired"`
	ParseError         string `json:"parseError"`
	Parsed             *struct {
		X402Version int `json:"x402Version"`
		Resource    struct {
			URL string `json:"url"`
		} `json:"resource"`
		Accepts []struct {
			Scheme            string            `json:"scheme"`
			Network           string            `json:"network"`
			Amount            string            `json:"amount"`
			Asset             string            `json:"asset"`
			PayTo             string            `json:"payTo"`
			MaxTimeoutSeconds int               `json:"maxTimeoutSeconds"`
			Extra             map[string]string `json:"extra"`
		} `json:"accepts"`
	} `json:"parsed"`
	V1 *struct {
		X402Version int `json:"x402Version"`
		Accepts     []struct {
			Network           string `json:"network"`
			MaxAmountRequired string `json:"maxAmountRequired"`
			PayTo             string `json:"payTo"`
			Asset             string `json:"asset"`
		} `json:"accepts"`
	} `json:"v1"`
}

// settleResponse is a decoded PAYMENT-RESPONSE (or X-PAYMENT-RESPONSE).
type settleResponse struct {
	Success     bool   `json:"success"`
	Transaction string `json:"transaction"`
	Network     string `json:"network"`
	Payer       string `json:"payer"`
	ErrorReason string `json:"errorReason"`
}

// payResult is what client.mjs prints for the pay and v1 scenarios.
type payResult struct {
	Status     int             `json:"status"`
	Body       runBody         `json:"body"`
	Settlement *settleResponse `json:"settlement"`
	SentHeader struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"sentHeader"`
}

// runBody is the JSON answer of POST /v1/code: a run, or an error.
type runBody struct {
	Lang        string  `json:"lang"`
	Environment string  `json:"environment"`
	Stdout      *string `json:"stdout"`
	Stderr      string  `json:"stderr"`
	ExitCode    int     `json:"exit_code"`
	Status      string  `json:"status"`
	Error       string  `json:"error"`
}

// String shows what a failure message needs.
func (b runBody) String() string {
	if b.Stdout == nil {
		return fmt.Sprintf("{error: %q}", b.Error)
	}
	return fmt.Sprintf("{status: %s, exit_code: %d, stdout: %q, stderr: %q}", b.Status, b.ExitCode, *b.Stdout, b.Stderr)
}

func runClient(t *testing.T, out any, scenario, url, keyFile string, extra ...string) {
	t.Helper()
	args := []string{scenario, "--url", url}
	if keyFile != "" {
		args = append(args, "--key-file", keyFile)
	}
	runNode(t, clientTimeout, out, "client.mjs", append(args, extra...)...)
}

func testTerms(t *testing.T, url string) {
	var r termsResult
	runClient(t, &r, "terms", url, "")
	if r.Status != http.StatusPaymentRequired || !r.HasPaymentRequired {
		t.Fatalf("unpaid call: status %d, PAYMENT-REQUIRED present %v; want 402 with it", r.Status, r.HasPaymentRequired)
	}
	if r.Parsed == nil || len(r.Parsed.Accepts) == 0 {
		t.Fatalf("the official client could not parse the terms: %s", r.ParseError)
	}
	if r.Parsed.X402Version != 2 || !strings.HasSuffix(r.Parsed.Resource.URL, "/v1/code") {
		t.Errorf("terms: version %d, resource %q", r.Parsed.X402Version, r.Parsed.Resource.URL)
	}
	a := r.Parsed.Accepts[0]
	if a.Scheme != "exact" || a.Network != "eip155:84532" || a.Amount != "5000" ||
		!strings.EqualFold(a.Asset, usdc) || !strings.EqualFold(a.PayTo, payee.address) ||
		a.Extra["name"] != "USDC" || a.Extra["version"] != "2" || a.MaxTimeoutSeconds <= 0 {
		t.Errorf("v2 terms: %+v", a)
	}
	if r.V1 == nil || r.V1.X402Version != 1 || len(r.V1.Accepts) == 0 {
		t.Fatalf("no v1 terms in the 402 body")
	}
	if v := r.V1.Accepts[0]; v.Network != "base-sepolia" || v.MaxAmountRequired != "5000" ||
		!strings.EqualFold(v.PayTo, payee.address) || !strings.EqualFold(v.Asset, usdc) {
		t.Errorf("v1 terms: %+v", v)
	}
}

func testPaid(t *testing.T, c *chain, url, keyFile string) payResult {
	return paidRun(t, c, url, keyFile, "print(6*7)", runAnswer{"stdout 42", func(b runBody) bool {
		return b.Stdout != nil && *b.Stdout == "42\n"
	}})
}

// runAnswer is the run a paid call must be answered with: what accepts its body, and
// how a failure message names it.
type runAnswer struct {
	desc string
	ok   func(runBody) bool
}

// paidRun pays for code with the official client (v2, PAYMENT-SIGNATURE) and checks that
// it is answered 200 with the run want accepts, and settled: a successful PAYMENT-RESPONSE
// naming the one transfer of the price from the payer to the payee, mined.
func paidRun(t *testing.T, c *chain, url, keyFile, code string, want runAnswer) payResult {
	return paidRunOf(t, c, url, keyFile, want, "--code", code)
}

// paidRunOf is paidRun of the request client.mjs's pay scenario makes of its arguments
// (--code SRC, or --body JSON for a request of another shape).
func paidRunOf(t *testing.T, c *chain, url, keyFile string, want runAnswer, request ...string) payResult {
	before := snapshot(t, c)
	var r payResult
	runClient(t, &r, "pay", url, keyFile, request...)
	if r.Status != http.StatusOK || !want.ok(r.Body) {
		t.Fatalf("paid call: status %d, body %v; want 200 with %s", r.Status, r.Body, want.desc)
	}
	s := r.Settlement
	if s == nil || !s.Success || !txHash.MatchString(s.Transaction) || s.Network != "eip155:84532" ||
		!strings.EqualFold(s.Payer, payer.address) {
		t.Fatalf("PAYMENT-RESPONSE as the client decodes it: %+v", s)
	}
	if r.SentHeader.Name != "PAYMENT-SIGNATURE" {
		t.Errorf("the client paid with %q, want PAYMENT-SIGNATURE", r.SentHeader.Name)
	}
	waitFor(5*time.Second, func() bool { return c.balance(t, payee.address) != before.payee })
	hash := expectMoved(t, c, before, payer.address)
	if !strings.EqualFold(hash, s.Transaction) {
		t.Errorf("the transfer is in %s, PAYMENT-RESPONSE names %s", hash, s.Transaction)
	}
	if st := c.receiptStatus(t, s.Transaction); st != "0x1" {
		t.Errorf("receipt status of %s: %s", s.Transaction, st)
	}
	if d := before.payer - c.balance(t, payer.address); d != price {
		t.Errorf("payer paid %d, want %d", d, price)
	}
	return r
}

// testReplay sends the header of the paid call again, byte for byte, with print(6*7) to
// url: when that is the request it paid for (same), the answer comes back from the store
// (200, Idempotent-Replayed, the original PAYMENT-RESPONSE, nothing run); with
// another request, and always when it is not the one paid for, it is refused (402). Nothing
// moves either way.
func testReplay(t *testing.T, c *chain, url string, paid payResult, same bool) {
	if paid.SentHeader.Value == "" {
		t.Fatal("no paid call to replay: the paid scenario failed")
	}
	before := snapshot(t, c)
	if same {
		status, body, h := postReplay(t, url, paid, "print(6*7)")
		if status != http.StatusOK || h.Get("Idempotent-Replayed") != "true" || h.Get("PAYMENT-RESPONSE") == "" ||
			!strings.Contains(body, `"stdout":"42\n"`) {
			t.Errorf("the payment sent again with its request: %d (%s), replayed %q; want its answer back",
				status, body, h.Get("Idempotent-Replayed"))
		}
	}
	status, body, _ := postReplay(t, url, paid, "print(6*7+0)")
	if status != http.StatusPaymentRequired {
		t.Errorf("replayed payment: status %d (%s), want 402", status, body)
	}
	if strings.Contains(body, `"stdout"`) {
		t.Errorf("replayed payment got a run: %s", body)
	}
	if !same {
		if status, body, _ := postReplay(t, url, paid, "print(6*7)"); status != http.StatusPaymentRequired {
			t.Errorf("replayed payment: status %d (%s), want 402", status, body)
		}
	}
	time.Sleep(300 * time.Millisecond)
	expectUnmoved(t, c, before)
}

// postReplay posts code to url with the payment header of paid.
func postReplay(t *testing.T, url string, paid payResult, code string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"language":"python","code":"`+code+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(paid.SentHeader.Name, paid.SentHeader.Value)
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body), res.Header
}

// concurrentResult is what client.mjs prints for the concurrent scenario.
type concurrentResult struct {
	N       int `json:"n"`
	Results []struct {
		Status     int             `json:"status"`
		Settlement *settleResponse `json:"settlement"`
		Stdout     *string         `json:"stdout"`
		Error      string          `json:"error"`
		Replayed   string          `json:"replayed"`
	} `json:"results"`
}

// checkOneRun checks the answers to n copies of one payment with one request sent at
// once: one ran and the rest waited for it and got its answer back
// (Idempotent-Replayed), each a 200 printing want with the settlement; none refused.
func checkOneRun(t *testing.T, r concurrentResult, n int, want string) {
	t.Helper()
	statuses, ran := map[int]int{}, 0
	for _, res := range r.Results {
		statuses[res.Status]++
		if res.Replayed == "" {
			ran++
		}
		if res.Status != http.StatusOK || res.Stdout == nil || *res.Stdout != want || res.Settlement == nil || !res.Settlement.Success {
			t.Errorf("a copy of the payment: %d, stdout %v, settlement %+v; want 200, %q and the settlement",
				res.Status, res.Stdout, res.Settlement, want)
		}
	}
	if len(r.Results) != n || statuses[http.StatusOK] != n || ran != 1 {
		t.Errorf("%d copies of one payment: %v, %d not replayed; want %d 200s, one run and the rest replayed", len(r.Results), statuses, ran, n)
	}
}

// testConcurrent sends one signed payment on ten requests at once: one run, one
// transfer, and the other nine get its answer.
func testConcurrent(t *testing.T, c *chain, url, keyFile string) {
	before := snapshot(t, c)
	var r concurrentResult
	runClient(t, &r, "concurrent", url, keyFile, "--n", "10")
	checkOneRun(t, r, 10, "42\n")
	waitFor(5*time.Second, func() bool { return c.balance(t, payee.address) != before.payee })
	time.Sleep(300 * time.Millisecond) // room for a second transfer, were there one
	expectMoved(t, c, before, payer.address)
}

func testUnfunded(t *testing.T, c *chain, url, keyFile string) {
	before := snapshot(t, c)
	var r payResult
	runClient(t, &r, "pay", url, keyFile)
	if r.Status != http.StatusPaymentRequired {
		t.Errorf("unfunded payer: status %d, want 402", r.Status)
	}
	if r.Body.Stdout != nil {
		t.Errorf("unfunded payer got a run: %q", *r.Body.Stdout)
	}
	if r.SentHeader.Value == "" {
		t.Errorf("the client sent no payment, so the refusal proves nothing")
	}
	time.Sleep(300 * time.Millisecond)
	expectUnmoved(t, c, before)
}

func testV1(t *testing.T, c *chain, url, keyFile string) {
	before := snapshot(t, c)
	var r payResult
	runClient(t, &r, "v1", url, keyFile)
	if r.SentHeader.Name != "X-PAYMENT" {
		t.Errorf("the v1 client paid with %q, want X-PAYMENT", r.SentHeader.Name)
	}
	if r.Status != http.StatusOK || r.Body.Stdout == nil || *r.Body.Stdout != "42\n" {
		t.Fatalf("v1 paid call: status %d, body %v; want 200 with stdout 42", r.Status, r.Body)
	}
	s := r.Settlement
	if s == nil || !s.Success || !txHash.MatchString(s.Transaction) || s.Network != "base-sepolia" {
		t.Errorf("X-PAYMENT-RESPONSE as the client decodes it: %+v", s)
	}
	waitFor(5*time.Second, func() bool { return c.balance(t, payee.address) != before.payee })
	expectMoved(t, c, before, payer.address)
}

// testDockerDown pays a service whose Docker engine is unreachable: it must answer 503
// and charge nothing.
func testDockerDown(t *testing.T, c *chain, url, keyFile string) {
	before := snapshot(t, c)
	var r payResult
	runClient(t, &r, "pay", url, keyFile)
	if r.SentHeader.Value == "" {
		t.Fatalf("the client never paid (status %d): the service must quote terms even with Docker down", r.Status)
	}
	if r.Status != http.StatusServiceUnavailable {
		t.Errorf("paid call with Docker down: status %d (%v), want 503", r.Status, r.Body)
	}
	if r.Settlement != nil && r.Settlement.Success {
		t.Errorf("a successful settlement came with the failure: %+v", r.Settlement)
	}
	time.Sleep(300 * time.Millisecond)
	expectUnmoved(t, c, before)
}
