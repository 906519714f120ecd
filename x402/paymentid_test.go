package x402_test

import (
	"encoding/json"
	"strings"
	"testing"

	. "sandboxd/x402"
	"sandboxd/x402/x402test"
)

// paymentIDVectors are x402/testdata/paymentid.json, the verdicts of
// @x402/extensions (made by testdata/paymentid.mjs).
type paymentIDVectors struct {
	Declaration string `json:"declaration"`
	Extensions  []struct {
		Name      string `json:"name"`
		Extension string `json:"extension"`
		Valid     bool   `json:"valid"` // validatePaymentIdentifier
		Extracted struct {
			Valid bool    `json:"valid"`
			ID    *string `json:"id"`
		} `json:"extracted"` // extractAndValidatePaymentIdentifier
	} `json:"extensions"`
	IDs []struct {
		ID    string `json:"id"`
		Valid bool   `json:"valid"`
	} `json:"ids"`
}

func mustPaymentIDVectors(tb testing.TB) paymentIDVectors {
	tb.Helper()
	var v paymentIDVectors
	x402test.ReadJSON(tb, "testdata/paymentid.json", &v)
	if len(v.Extensions) == 0 || len(v.IDs) == 0 {
		tb.Fatal("no vectors")
	}
	return v
}

// TestParsePaymentIDVectors: ParsePaymentID gives validatePaymentIdentifier's
// verdict on every vector, and extractAndValidatePaymentIdentifier's id.
// One deliberate difference: a JSON null is an absent extension (as
// extractAndValidate has it), not a malformed one.
func TestParsePaymentIDVectors(t *testing.T) {
	for _, v := range mustPaymentIDVectors(t).Extensions {
		t.Run(v.Name, func(t *testing.T) {
			id, err := ParsePaymentID(map[string]json.RawMessage{ExtensionPaymentIdentifier: json.RawMessage(v.Extension)})
			want := v.Valid || v.Extension == "null"
			if (err == nil) != want {
				t.Fatalf("ParsePaymentID(%s) = %q, %v; official verdict valid=%v", v.Extension, id, err, v.Valid)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "payment-identifier extension is malformed") {
					t.Errorf("error %q does not name the extension", err)
				}
				return
			}
			wantID := ""
			if v.Extracted.ID != nil {
				wantID = *v.Extracted.ID
			}
			if id != wantID {
				t.Errorf("id = %q, official %q", id, wantID)
			}
		})
	}
}

// TestParsePaymentIDAbsent: no extensions, or others only, carry no id.
func TestParsePaymentIDAbsent(t *testing.T) {
	for _, ext := range []map[string]json.RawMessage{nil, {}, {"bazaar": json.RawMessage(`{"info":{}}`)},
		{"Payment-Identifier": json.RawMessage(`{"info":{"required":false,"id":"abcdefghij012345"}}`)}} {
		if id, err := ParsePaymentID(ext); id != "" || err != nil {
			t.Errorf("ParsePaymentID(%v) = %q, %v", ext, id, err)
		}
	}
}

// TestValidPaymentIDVectors: the id rule is isValidPaymentId's.
func TestValidPaymentIDVectors(t *testing.T) {
	for _, v := range mustPaymentIDVectors(t).IDs {
		if got := ValidPaymentID(v.ID); got != v.Valid {
			t.Errorf("ValidPaymentID(%q) = %v, official %v", v.ID, got, v.Valid)
		}
	}
}

// TestPaymentIdentifierDeclaration: the declaration encodes byte for byte
// as declarePaymentIdentifierExtension(false), and each call is its own.
func TestPaymentIdentifierDeclaration(t *testing.T) {
	got, err := json.Marshal(PaymentIdentifierDeclaration())
	if err != nil {
		t.Fatal(err)
	}
	if want := mustPaymentIDVectors(t).Declaration; string(got) != want {
		t.Errorf("declaration\n got %s\nwant %s", got, want)
	}
	d := PaymentIdentifierDeclaration()
	d["info"].(map[string]any)["required"] = true
	if again, _ := json.Marshal(PaymentIdentifierDeclaration()); string(again) != string(got) {
		t.Error("a caller's change reached the next declaration")
	}
}

// TestNewPaymentID: new ids follow the rule and differ.
func TestNewPaymentID(t *testing.T) {
	a, b := NewPaymentID(), NewPaymentID()
	if !ValidPaymentID(a) || !strings.HasPrefix(a, "sdx_") || len(a) != 36 || a == b {
		t.Errorf("NewPaymentID = %q, %q", a, b)
	}
}

// TestWithPaymentID: the declaration echoed with the id parses back to the
// id, its schema kept; a bad id or a bad declaration is refused.
func TestWithPaymentID(t *testing.T) {
	decl, _ := json.Marshal(PaymentIdentifierDeclaration())
	out, err := WithPaymentID(decl, "pay_7d5d747be160e280504c099d984bcfe0")
	if err != nil {
		t.Fatal(err)
	}
	id, err := ParsePaymentID(map[string]json.RawMessage{ExtensionPaymentIdentifier: out})
	if err != nil || id != "pay_7d5d747be160e280504c099d984bcfe0" {
		t.Fatalf("parsed back %q, %v from %s", id, err, out)
	}
	if !strings.Contains(string(out), `"schema":{"$schema"`) {
		t.Errorf("schema lost: %s", out)
	}
	for _, c := range []struct{ decl, id string }{
		{string(decl), "short"}, {string(decl), "abcdefghij01234.5"},
		{`{"info":"x"}`, "abcdefghij012345"}, {`null`, "abcdefghij012345"}, {`[]`, "abcdefghij012345"},
	} {
		if out, err := WithPaymentID(json.RawMessage(c.decl), c.id); err == nil {
			t.Errorf("WithPaymentID(%s, %q) = %s, want an error", c.decl, c.id, out)
		}
	}
}
