package x402_test

import (
	"encoding/json"
	"testing"

	"sandboxd/x402"
)

// TestExtraMembers: a scheme's members are set and read back beside name
// and version, kept in the encoding, and cannot replace name or version or
// be other than JSON.
func TestExtraMembers(t *testing.T) {
	e := x402.Extra{Name: "USDC", Version: "2"}
	got, err := e.WithMembers(map[string]json.RawMessage{"withdrawDelay": json.RawMessage(`900`), "minDeposit": json.RawMessage(`"10"`)})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := got.Member("withdrawDelay"); !ok || string(v) != "900" {
		t.Fatalf("Member(withdrawDelay) = %s, %v", v, ok)
	}
	if _, ok := e.Member("withdrawDelay"); ok {
		t.Fatal("WithMembers changed its receiver")
	}
	b, err := json.Marshal(got)
	if err != nil || string(b) != `{"minDeposit":"10","name":"USDC","version":"2","withdrawDelay":900}` {
		t.Fatalf("encoded %s, %v", b, err)
	}
	for _, bad := range []map[string]json.RawMessage{{"name": json.RawMessage(`"x"`)}, {"a": json.RawMessage(`{`)}} {
		if _, err := e.WithMembers(bad); err == nil {
			t.Fatalf("WithMembers(%s) took it", bad)
		}
	}
}
