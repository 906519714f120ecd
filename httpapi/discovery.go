package httpapi

import (
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sandboxd"
)

// The x402 v2 discovery extension ("bazaar"): directories of paid endpoints
// read extensions.bazaar in the terms to list what is sold and how to call
// it. Its info says how to call the resource, with an example; its schema is
// a JSON Schema the info satisfies, holding the input and output schemas.

// bazaarKey is the extension's key in PaymentRequired.extensions.
const bazaarKey = "bazaar"

// discoverySchemaDialect is the JSON Schema dialect of the extension's schema.
const discoverySchemaDialect = "https://json-schema.org/draft/2020-12/schema"

// exampleInput is the example call of lang in the discovery info.
func exampleInput(lang string) map[string]any {
	return map[string]any{"code": languages[lang].Example, "stdin": languages[lang].Stdin}
}

// exampleOutput is the answer of exampleInput(lang), run in env.
func exampleOutput(lang, env string) map[string]any {
	return map[string]any{"lang": lang, "stdout": languages[lang].Stdout, "stderr": "", "exit_code": 0, "status": "ok",
		"timed_out": false, "oom_killed": false, "truncated": false, "duration_ms": 6, "cpu_ms": 1, "max_rss_kb": 11520,
		"environment": env, "files": []any{}, "files_truncated": false}
}

// exampleSession is the answer of an opening of a Python session.
func exampleSession() map[string]any {
	return map[string]any{"session_id": "ses_" + "8f0c1d2e3a4b5c6d7e8f901a2b3c4d5e", "environment": "python",
		"language": "python", "created_at": "2026-12-01T12:00:00Z", "expires_at": "2026-12-01T12:05:00Z",
		"idle_timeout_s": 300, "max_lifetime_s": 1800}
}

// answerOf is the output half of the info and of its schema: an example
// answer and its schema.
func answerOf(answer, answerSchema map[string]any) (info, schema map[string]any) {
	info = map[string]any{"type": "json", "example": answer}
	schema = map[string]any{
		"type":       "object",
		"properties": map[string]any{"type": map[string]any{"type": "string"}, "example": answerSchema},
		"required":   []string{"type"},
	}
	return info, schema
}

// bazaar is the extension of a resource: how to call it and what it
// answers, as examples (input, outInfo) and their schemas. The input's
// schema is whole (its descriptions say what each environment costs and
// what a request may hold); the answer's is its shape alone, without
// descriptions: every payer echoes the extension in each payment it sends,
// so its bytes are carried, encoded and decoded twice a paid call, and the
// answer's prose is in the OpenAPI document and the MCP tool's own schema.
func bazaar(input, inputSchema, outInfo, outSchema map[string]any) map[string]any {
	return map[string]any{
		"info": map[string]any{"input": input, "output": outInfo},
		"schema": map[string]any{
			"$schema":    discoverySchemaDialect,
			"type":       "object",
			"properties": map[string]any{"input": inputSchema, "output": shapeOf(outSchema)},
			"required":   []string{"input"},
		},
	}
}

// shapeOf is a copy of a JSON Schema without its "description" keywords, at
// every depth; a property that is named "description" is kept. The schema
// given is not changed.
func shapeOf(schema map[string]any) map[string]any {
	out := make(map[string]any, len(schema))
	for k, v := range schema {
		switch {
		case k == "description":
		case k == "const" || k == "enum" || k == "default" || k == "example" || k == "examples":
			out[k] = v
		case k == "properties" || k == "$defs" || k == "definitions":
			if props, ok := v.(map[string]any); ok {
				named := make(map[string]any, len(props))
				for name, sub := range props {
					named[name] = shapeOfAny(sub)
				}
				v = named
			}
			out[k] = v
		default:
			out[k] = shapeOfAny(v)
		}
	}
	return out
}

// shapeOfAny is shapeOf for a keyword's value: a subschema, a list of
// them, or any other value kept as it is.
func shapeOfAny(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return shapeOf(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = shapeOfAny(e)
		}
		return out
	}
	return v
}

// httpDiscovery is the extension for POST /v1/code.
func (s *Server) httpDiscovery() map[string]any {
	py := sandboxd.LanguagePython
	return s.httpBazaar(exampleInput(py), s.codeRequestSchema(), exampleOutput(py, sandboxd.DefaultEnvironment),
		s.runResultSchema())
}

// httpBazaar is the discovery extension of a JSON POST route: its example
// body and answer, and their schemas.
func (s *Server) httpBazaar(body, bodySchema, answer, answerSchema map[string]any) map[string]any {
	input := map[string]any{"type": "http", "method": "POST", "bodyType": "json", "body": body}
	inputSchema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"type":     map[string]any{"type": "string", "const": "http"},
			"method":   map[string]any{"type": "string", "enum": []string{"POST"}},
			"bodyType": map[string]any{"type": "string", "enum": []string{"json"}},
			"body":     bodySchema,
		},
		"required":             []string{"type", "method", "bodyType", "body"},
		"additionalProperties": false,
	}
	outInfo, outSchema := answerOf(answer, answerSchema)
	return bazaar(input, inputSchema, outInfo, outSchema)
}

// mcpDiscovery is the extension for lang's run tool: its own input schema
// and example, run in the environment a call without one runs in.
func (s *Server) mcpDiscovery(lang string) map[string]any {
	_, env, _ := s.catalog().Resolve(lang, "")
	return toolBazaar(s.runTool(lang), exampleInput(lang), exampleOutput(lang, env), s.runResultSchema())
}

// toolBazaar is the discovery extension of a paid MCP tool: how to call it
// (its input schema and an example of its arguments) and an example of its
// structured answer, with that answer's schema.
func toolBazaar(tool *mcp.Tool, args, answer, answerSchema map[string]any) map[string]any {
	inputSchema, _ := tool.InputSchema.(map[string]any)
	input := map[string]any{"type": "mcp", "toolName": tool.Name, "description": tool.Description,
		"transport": "streamable-http", "inputSchema": inputSchema, "example": args}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"type":        map[string]any{"type": "string", "const": "mcp"},
			"toolName":    map[string]any{"type": "string", "const": tool.Name},
			"description": map[string]any{"type": "string"},
			"transport":   map[string]any{"type": "string", "enum": []string{"streamable-http"}},
			"inputSchema": map[string]any{"type": "object"},
			"example":     inputSchema,
		},
		"required":             []string{"type", "toolName", "inputSchema"},
		"additionalProperties": false,
	}
	outInfo, outSchema := answerOf(answer, answerSchema)
	return bazaar(input, schema, outInfo, outSchema)
}

// httpExtensions are the extensions declared for POST /v1/code: quoted in
// its terms and, through the PaymentRequest, the only ones a facilitator
// is sent.
func (s *Server) httpExtensions() map[string]any {
	return s.withPaymentID(map[string]any{bazaarKey: s.httpDiscovery()})
}

// toolExtensions are the extensions declared for lang's run tool.
func (s *Server) toolExtensions(lang string) map[string]any {
	return s.withPaymentID(map[string]any{bazaarKey: s.mcpDiscovery(lang)})
}

// addExtensions puts the declared extensions into terms (a PaymentRequired
// object).
func addExtensions(terms, declared map[string]any) {
	ext, _ := terms["extensions"].(map[string]any)
	if ext == nil {
		ext = map[string]any{}
		terms["extensions"] = ext
	}
	for name, v := range declared {
		ext[name] = v
	}
}

// withExtensions returns err with the declared extensions added to the
// v2 terms it carries; any other error comes back as it was.
func withExtensions(err error, declared map[string]any) error {
	terms := paymentTerms(err)
	if terms == nil {
		return err
	}
	addExtensions(terms, declared)
	raw, merr := json.Marshal(terms)
	if merr != nil {
		return err
	}
	var e *sandboxd.Error
	errors.As(err, &e)
	with, details, quoted := *e, *e.Payment, *e.Payment.Terms
	quoted.V2 = raw
	details.Terms = &quoted
	with.Payment = &details
	return &with
}
