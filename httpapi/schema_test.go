package httpapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"sandboxd"
	"sandboxd/httpapi/wire"
	"sandboxd/x402"
)

// mustJSON is v's JSON.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// wantIn fails for each of wants that doc lacks.
func wantIn(t *testing.T, what, doc string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(doc, want) {
			t.Errorf("%s lacks %s", what, want)
		}
	}
}

// The fragments every description of the request must hold: the
// environments with their limits and prices, the files in and the caps.
var requestFragments = []string{`"environment":{"default":"python"`, `"enum":["python","data"]`,
	"data: numpy, pandas, matplotlib (runs python, timeout 10s, memory 512 MiB, price 0.01 per call)",
	"python: Standard library only (runs python, timeout 5s, memory 256 MiB, price 0.005 per call)",
	`"files":{"description":"Files written`, `"maxItems":3`, "at most 3 files (max_files) of 64 bytes in all",
	`"required":["name","content"]`, `"contentEncoding":"base64"`}

// The fragments every description of the answer must hold.
var answerFragments = []string{`"files_truncated":{`, `"media_type":{`, `"required":["name","size","media_type"]`,
	`"environment","files","files_truncated"]`}

// TestSchemasDescribeEnvironmentsAndFiles: the tool's input and output
// schemas, the OpenAPI document and the bazaar extension (HTTP and MCP)
// describe the environments and the files in and out.
func TestSchemasDescribeEnvironmentsAndFiles(t *testing.T) {
	payErr := &sandboxd.Error{Code: sandboxd.CodePayment, Message: "payment required",
		Payment: termsDetails(map[string]any{"x402Version": 2, "error": "payment required"}, nil)}
	api := newFilesServer(&fakeRunner{}, &fakeGate{checkErr: payErr})
	tools, err := mustMCP(t, api).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantIn(t, "the input schema", mustJSON(t, tools.Tools[0].InputSchema), requestFragments...)
	wantIn(t, "the output schema", mustJSON(t, tools.Tools[0].OutputSchema), answerFragments...)
	wantIn(t, "the tool's description", tools.Tools[0].Description, "Environments: python, data")

	doc := do(t, api.Handler(), "GET", "/v1/openapi.json", "").Body.String()
	wantIn(t, "the OpenAPI document", doc, requestFragments...)
	wantIn(t, "the OpenAPI document", doc, answerFragments...)
	wantIn(t, "the OpenAPI document", doc, "over max_files or max_files_bytes", `"429"`)

	rec := do(t, api.Handler(), "POST", "/v1/code", `{"code":"x"}`)
	httpBazaar := mustJSON(t, bazaarOf(t, headerObject(rec.Header(), x402.HeaderPaymentRequired)))
	wantIn(t, "the HTTP bazaar", httpBazaar, requestFragments...)
	wantIn(t, "the HTTP bazaar", httpBazaar, answerFragments...)
	wantIn(t, "the HTTP bazaar's example", httpBazaar, `"environment":"python","exit_code":0,"files":[],"files_truncated":false`)

	res := callTool(t, mustMCP(t, api), map[string]any{"code": "x"}, nil)
	mcpBazaar := mustJSON(t, bazaarOf(t, structured(t, res)))
	wantIn(t, "the MCP bazaar", mcpBazaar, requestFragments...)
	wantIn(t, "the MCP bazaar", mcpBazaar, answerFragments...)
}

// TestSchemasWithoutEnvironments: a server configured with none describes
// python alone, and every request field.
func TestSchemasWithoutEnvironments(t *testing.T) {
	api := newTestServer(&fakeRunner{}, &fakeGate{})
	in := mustJSON(t, api.toolInputSchema(sandboxd.LanguagePython))
	wantIn(t, "the input schema", in, `"enum":["python"]`, `"default":"python"`, `"maxItems":0`)
	for _, c := range []struct {
		what   string
		schema map[string]any
		v      any
	}{
		{"the request schema", api.codeRequestSchema(), &codeRequest{}},
		{"the tool's input schema", api.toolInputSchema(sandboxd.LanguagePython), &toolInput{}},
		{"the result schema", api.runResultSchema(), &wire.CodeResponse{}},
	} {
		props := c.schema["properties"].(map[string]any)
		names := fieldNames(c.v)
		for name := range props {
			if !strings.Contains(names, name) {
				t.Errorf("%s has %s; the fields are %s", c.what, name, names)
			}
		}
		if strings.Count(names, ",")+2 != len(props) {
			t.Errorf("%s has %d properties; the fields are %s", c.what, len(props), names)
		}
	}
	if len(runResultFields) != len(api.runResultSchema()["properties"].(map[string]any)) {
		t.Errorf("the result requires %v, not every field", runResultFields)
	}
}
