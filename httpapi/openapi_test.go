package httpapi

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/gorilla/mux"
)

// TestOpenAPIMatchesTheRouter: every route the router serves is in the
// document, with each of its methods, and the document names no route or
// method the router does not serve.
func TestOpenAPIMatchesTheRouter(t *testing.T) {
	api := newTestServer(&fakeRunner{}, &fakeGate{})
	served := map[string]bool{}
	err := api.router().Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := route.GetPathTemplate()
		if err != nil {
			return err
		}
		methods, err := route.GetMethods()
		if err != nil {
			t.Errorf("route %s serves every method; name them", path)
		}
		for _, m := range methods {
			served[strings.ToLower(m)+" "+path] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := do(t, api.Handler(), "GET", "/v1/openapi.json", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d %s", rec.Code, rec.Body)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented[method+" "+path] = true
		}
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	for _, op := range keys(served) {
		if !documented[op] {
			t.Errorf("the router serves %s; the document lacks it", op)
		}
	}
	for _, op := range keys(documented) {
		if !served[op] {
			t.Errorf("the document names %s; the router does not serve it", op)
		}
	}
	if len(served) < 7 {
		t.Errorf("walked only %v", keys(served))
	}
}

// TestOpenAPIDocumentsThe402: the 402 answer, its x402 headers and the
// error body are in the document.
func TestOpenAPIDocumentsThe402(t *testing.T) {
	body := do(t, newTestServer(&fakeRunner{}, &fakeGate{}).Handler(), "GET", "/v1/openapi.json", "").Body.String()
	for _, want := range []string{`"402"`, `"PAYMENT-REQUIRED"`, `"PAYMENT-SIGNATURE"`, `"PAYMENT-RESPONSE"`, `"X-PAYMENT"`,
		`"Retry-After"`, `"#/components/schemas/Error"`, `"stdin"`, `"cpu_ms"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the document lacks %s", want)
		}
	}
}

// keys returns the sorted keys of m.
func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
