package interop

import (
	"testing"
	"time"
)

// TestOpenAPIValidates: the real binary's GET /v1/openapi.json passes a well-known
// OpenAPI validator from npm (@apidevtools/swagger-parser).
func TestOpenAPIValidates(t *testing.T) {
	mustInterop(t)
	svc := startService(t, instance("openapi"), false)
	var r struct {
		Valid   bool     `json:"valid"`
		Error   string   `json:"error"`
		OpenAPI string   `json:"openapi"`
		Paths   []string `json:"paths"`
	}
	runNode(t, time.Minute, &r, "openapi.mjs", "--url", svc.URL+"/v1/openapi.json")
	if !r.Valid || r.OpenAPI != "3.1.0" || len(r.Paths) != 9 { // six routes (GET /v1/channel among them) and the three of sessions
		t.Fatalf("swagger-parser: valid %v (%s), openapi %q, paths %v", r.Valid, r.Error, r.OpenAPI, r.Paths)
	}
}
