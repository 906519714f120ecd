package interop

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
)

// TestNoSecretsInAnswersOrLogs runs the real service with a Docker socket that does not
// exist, and on chain through an RPC URL holding an API key in its userinfo and query:
// no answer names the socket, no answer and no log line holds the key, and the log
// still names the socket and the RPC's host for the operator.
func TestNoSecretsInAnswersOrLogs(t *testing.T) {
	mustInterop(t)
	t.Run("docker socket", func(t *testing.T) {
		svc := startService(t, instance("leak-docker"), false, "DOCKER_HOST=unix:///nonexistent/secret-dir/docker.sock")
		for _, req := range []struct{ method, path, body string }{
			{http.MethodGet, "/v1/health", ""},
			{http.MethodPost, "/v1/code", `{"language":"python","code":"print(1)"}`},
		} {
			status, body := do(t, req.method, svc.URL+req.path, req.body)
			if status != http.StatusServiceUnavailable || strings.Contains(body, "secret-dir") || strings.Contains(body, "docker.sock") {
				t.Errorf("%s %s: %d %s; want 503 naming no socket", req.method, req.path, status, body)
			}
		}
		if !strings.Contains(svc.Log(), "secret-dir") {
			t.Errorf("the log does not name the socket for the operator:\n%s", svc.Log())
		}
	})
	t.Run("rpc url", func(t *testing.T) {
		var proxy *httptest.Server
		c, env := startMode(t, "onchain", func(t testing.TB, rpc string) string {
			target, _ := url.Parse(rpc)
			proxy = httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
			t.Cleanup(proxy.Close)
			return strings.Replace(proxy.URL, "http://", "http://user:pa55word@", 1) + "/?apikey=QUERYSECRET"
		})
		svc := startService(t, instance("leak-rpc"), true, paymentEnv(env)...)
		url := svc.URL + "/v1/code"
		payerKey := writeKey(t, "payer.key", payer.key)
		testPaid(t, c, url, payerKey)
		var next clientSigned
		runClient(t, &next, "sign", url, payerKey)
		proxy.CloseClientConnections()
		proxy.Close()
		status, body := postPayment(t, url, "PAYMENT-SIGNATURE", next.Headers["PAYMENT-SIGNATURE"])
		if status < 500 {
			t.Errorf("a paid call with the RPC down: %d %s, want a 5xx", status, body)
		}
		for _, secret := range []string{"pa55word", "QUERYSECRET"} {
			if strings.Contains(body, secret) || strings.Contains(svc.Log(), secret) {
				t.Errorf("the RPC URL's secret %q leaked: answer %s\nlog:\n%s", secret, body, svc.Log())
			}
		}
		if !strings.Contains(svc.Log(), strings.TrimPrefix(proxy.URL, "http://")) {
			t.Errorf("the log does not name the RPC's host for the operator:\n%s", svc.Log())
		}
	})
}

// do makes one request and returns the status and body.
func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
