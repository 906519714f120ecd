package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"sandboxd"
	"sandboxd/x402"
)

// TestHTTPTermsCarryDiscovery: the 402 of POST /v1/code carries the bazaar
// extension in its PAYMENT-REQUIRED terms (HTTP form: POST, a JSON body),
// and the v1 body and other headers are as the gate made them.
func TestHTTPTermsCarryDiscovery(t *testing.T) {
	terms := map[string]any{"x402Version": 2, "error": "payment required", "accepts": []any{map[string]any{"scheme": "exact"}}}
	payErr := &sandboxd.Error{Code: sandboxd.CodePayment, Message: "payment required",
		Payment: termsDetails(terms, map[string]any{"x402Version": 1, "error": "payment required"})}
	gateTerms := *payErr.Payment.Terms
	rec := do(t, newTestServer(&fakeRunner{}, &fakeGate{checkErr: payErr}).Handler(), "POST", "/v1/code", `{"code":"x"}`)
	if rec.Code != http.StatusPaymentRequired || rec.Body.String() != `{"error":"payment required","x402Version":1}`+"\n" {
		t.Fatalf("status %d, headers %v, body %s", rec.Code, rec.Header(), rec.Body)
	}
	got := headerObject(rec.Header(), x402.HeaderPaymentRequired)
	bazaar := bazaarOf(t, got)
	input, _ := bazaar["info"].(map[string]any)["input"].(map[string]any)
	if input["type"] != "http" || input["method"] != "POST" || input["bodyType"] != "json" || input["body"] == nil {
		t.Errorf("bazaar info input %v", input)
	}
	if got["error"] != "payment required" || got["accepts"] == nil {
		t.Errorf("terms lost their fields: %v", got)
	}
	if string(payErr.Payment.Terms.V2) != string(gateTerms.V2) || payErr.Payment.Terms.V1 == nil {
		t.Error("the gate's error was changed in place")
	}
}

// TestBazaarSchemasAreShapes: the bazaar's answer schema carries no
// descriptions (the payer echoes it in every payment), keeps a property named
// "description" and every value of const, enum and default, and leave the
// schemas they were made from whole.
func TestBazaarSchemasAreShapes(t *testing.T) {
	in := map[string]any{
		"type": "object", "description": "drop me",
		"properties": map[string]any{
			"description": map[string]any{"type": "string", "description": "drop me too"},
			"mode":        map[string]any{"enum": []any{map[string]any{"description": "a value"}}, "default": "a"},
			"list":        map[string]any{"type": "array", "items": map[string]any{"description": "gone", "type": "string"}},
			"either":      map[string]any{"anyOf": []any{map[string]any{"description": "gone", "type": "null"}}},
		},
	}
	before := mustJSON(t, in)
	got := mustJSON(t, shapeOf(in))
	want := `{"properties":{"description":{"type":"string"},"either":{"anyOf":[{"type":"null"}]},` +
		`"list":{"items":{"type":"string"},"type":"array"},"mode":{"default":"a","enum":[{"description":"a value"}]}},"type":"object"}`
	if got != want {
		t.Errorf("shapeOf\n got %s\nwant %s", got, want)
	}
	if mustJSON(t, in) != before {
		t.Error("shapeOf changed the schema it was given")
	}
	api := newTestServer(&fakeRunner{}, &fakeGate{})
	for name, ext := range map[string]map[string]any{"http": api.httpDiscovery(), "mcp": api.mcpDiscovery(sandboxd.LanguagePython)} {
		props := ext["schema"].(map[string]any)["properties"].(map[string]any)
		if s := mustJSON(t, props["output"]); strings.Contains(s, `"description":"`) {
			t.Errorf("the %s bazaar's answer schema has a description: %.300s", name, s)
		}
		if s := mustJSON(t, props["input"]); !strings.Contains(s, `"description":"`) {
			t.Errorf("the %s bazaar's input schema lost its descriptions: %.300s", name, s)
		}
	}
}
