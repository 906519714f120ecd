package httpapi

import (
	"maps"
	"net/http"

	"sandboxd/x402"
)

// handleOpenAPI answers the OpenAPI 3.1 document of the API.
func (s *Server) handleOpenAPI(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.openAPI())
}

// ref is a JSON reference to a component of kind.
func ref(kind, name string) map[string]any {
	return map[string]any{"$ref": "#/components/" + kind + "/" + name}
}

// jsonContent is a JSON body of the schema.
func jsonContent(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

// reply is a response with a description, a JSON body and headers.
func reply(description string, schema any, headers map[string]any) map[string]any {
	r := map[string]any{"description": description}
	if schema != nil {
		r["content"] = jsonContent(schema)
	}
	if len(headers) > 0 {
		r["headers"] = headers
	}
	return r
}

// errorReply is an error response with the error body.
func errorReply(description string) map[string]any {
	return reply(description, ref("schemas", "Error"), nil)
}

// x402Header is an x402 header: base64 of a JSON object.
func x402Header(description string) map[string]any {
	return map[string]any{"description": description + " Standard base64 of its JSON.", "schema": map[string]any{"type": "string"}}
}

// openAPI is the OpenAPI 3.1 document of every route Handler serves.
func (s *Server) openAPI() map[string]any {
	health := map[string]any{
		"summary": "Whether runs can start: Docker answers and the image is present.",
		"responses": map[string]any{"200": reply("Ready; while an environment's image is being built, environments says which is "+
			"\"building\" and building when it should be ready (its runs answer 503 with Retry-After meanwhile).",
			object("", map[string]any{"status": typed("string", "ok"),
				"environments": typed("object", "Each environment's state, ready or building; only while one is building."),
				"building":     typed("object", "By environment: image, started, ready_at and ready_in_seconds of its image's build."),
			}, "status"), nil),
			"503": errorReply("Docker is unreachable or an image is missing (and not being built); the reason is in the body.")},
	}
	version := map[string]any{
		"summary":   "The service's version and commit, Go, the Docker engine and the image.",
		"responses": map[string]any{"200": reply("The versions; the engine's part is missing (docker_error says why) when Docker does not answer.", typed("object", "Versions."), nil)},
	}
	paths := map[string]any{
		"/v1/code":         map[string]any{"post": codeOperation()},
		"/v1/health":       map[string]any{"get": health, "head": health},
		"/v1/version":      map[string]any{"get": version, "head": version},
		"/v1/openapi.json": map[string]any{"get": map[string]any{"summary": "This document.", "responses": map[string]any{"200": reply("The OpenAPI 3.1 document.", typed("object", "OpenAPI 3.1."), nil)}}},
		"/mcp":             map[string]any{"post": mcpOperation()},
		channelPath:        map[string]any{"get": channelOperation()},
	}
	schemas := map[string]any{
		"CodeRequest":       s.codeRequestSchema(),
		"RunResult":         s.runResultSchema(),
		"Error":             errorSchema(),
		"PaymentRequired":   paymentRequiredSchema(),
		"PaymentRequiredV1": paymentRequiredV1Schema(),
	}
	maps.Copy(paths, s.sessionPaths())
	maps.Copy(schemas, s.sessionSchemas())
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "sandboxd",
			"version":     s.Version.Version,
			"description": "Run a short Python program in a fresh, isolated container; paid per call over x402 when payments are on.",
		},
		"paths":       paths,
		"components":  map[string]any{"schemas": schemas},
		"x-languages": s.languagesExtension(),
	}
}

// languagesExtension is the document's x-languages: each language some
// enabled environment runs, in the order messages name them, with the
// environments that run it (in the catalog's order) and the one a request
// that names none runs it in (Resolve's rule 3). It says in data what the
// language field's description says in words; the try-it page builds its
// language switch and environment chooser from it. It is not in the
// schemas themselves: strict JSON Schema validators refuse an unknown
// keyword, and the schemas travel in MCP tools and in x402 terms.
func (s *Server) languagesExtension() []map[string]any {
	c := s.catalog()
	out := []map[string]any{}
	for _, lang := range c.Languages() {
		_, home, _ := c.Resolve(lang, "")
		out = append(out, map[string]any{"language": lang, "environments": c.EnvironmentsOf(lang), "default_environment": home})
	}
	return out
}

// codeOperation is POST /v1/code, with every answer and the x402 headers.
func codeOperation() map[string]any {
	return map[string]any{
		"summary": "Run a program and answer its outcome.",
		"description": "The body is read as JSON whatever Content-Type says. With payments on, a call without payment " +
			"gets 402 with the terms; the client retries with PAYMENT-SIGNATURE (x402 v2) or X-PAYMENT (v1). The v2 terms " +
			"offer two schemes: exact (one EIP-3009 transfer per call) and, when the service offers channels, " +
			"batch-settlement (a deposit once, then a voucher per call, checked without the chain).",
		"parameters": []any{
			map[string]any{"name": x402.HeaderPaymentSignature, "in": "header", "required": false,
				"description": "x402 v2 PaymentPayload, standard base64 of its JSON.", "schema": map[string]any{"type": "string"}},
			map[string]any{"name": "X-PAYMENT", "in": "header", "required": false,
				"description": "x402 v1 payment, standard base64 of its JSON.", "schema": map[string]any{"type": "string"}},
		},
		"requestBody": map[string]any{"required": true, "content": jsonContent(ref("schemas", "CodeRequest"))},
		"responses": withRetries(map[string]any{
			"200": reply("The run was delivered (whatever the program did). Paid calls carry the settlement.", ref("schemas", "RunResult"), map[string]any{
				x402.HeaderPaymentResponse: x402Header("x402 v2 SettleResponse of a paid call; for batch-settlement its extra holds " +
					"chargedAmount and channelState."),
				x402.HeaderXPaymentResponse: x402Header("x402 v1 settlement report, when paid with X-PAYMENT."),
			}),
			"400": errorReply("The body is not a JSON object, or a field is wrong or unknown: a language not run here, an " +
				"environment not configured or that does not run the language, " +
				"a file's name (the message names the file and the rule), a duplicate, or content that is not base64."),
			"402": reply("Payment required, refused, or not settled (the answer is then withheld). The v1 terms are the body. "+
				"A batch-settlement voucher whose running total is not the charged total plus the price gets the corrective "+
				"402: error is the bare code, and the batch entry's extra holds channelState and voucherState.", ref("schemas", "PaymentRequiredV1"), map[string]any{
				x402.HeaderPaymentRequired: x402Header("x402 v2 PaymentRequired (the terms)."),
				x402.HeaderPaymentResponse: x402Header("x402 v2 SettleResponse with success false, when settlement failed."),
			}),
			"413": errorReply("The body, code or stdin is over its limit, or the files are over max_files or max_files_bytes (the message says which)."),
			"429": reply("Every sandbox is busy, or too many large bodies are being read at once; nothing was charged.", ref("schemas", "Error"), map[string]any{
				"Retry-After": map[string]any{"description": "Seconds to wait before retrying.", "schema": map[string]any{"type": "integer"}},
			}),
			"500": errorReply("The service failed (logged); nothing was charged."),
			"503": reply("Docker, the ledger or the chain is unavailable, or the environment's image is still being built "+
				"(asked before any payment); nothing was charged.", ref("schemas", "Error"), map[string]any{
				"Retry-After": map[string]any{"description": "Seconds until the image should be ready, when it is being built.", "schema": map[string]any{"type": "integer"}},
			}),
		}, "200", ""),
	}
}

// channelOperation is GET /v1/channel: batch-settlement refunds.
func channelOperation() map[string]any {
	return map[string]any{
		"summary": "Refund what a batch-settlement channel holds beyond what was charged.",
		"description": "Without a payment: 402 with the terms (the official x402 client's refund reads them). With " +
			"PAYMENT-SIGNATURE holding a batch-settlement refund payload (its voucher at the charged total): the refund, " +
			"made on chain before the answer, with what was charged and not yet claimed claimed in the same transaction. " +
			"Nothing runs and nothing is charged.",
		"parameters": []any{map[string]any{"name": x402.HeaderPaymentSignature, "in": "header", "required": false,
			"description": "x402 v2 PaymentPayload of scheme batch-settlement, type refund; standard base64 of its JSON.",
			"schema":      map[string]any{"type": "string"}}},
		"responses": map[string]any{
			"200": reply("Refunded.", object("", map[string]any{"refund": object("", map[string]any{
				"channel_id": typed("string", "The channel."), "amount": typed("string", "Paid back, atomic units."),
				"transaction": typed("string", "The refund's transaction.")}, "channel_id", "amount", "transaction")}, "refund"),
				map[string]any{x402.HeaderPaymentResponse: x402Header("x402 v2 SettleResponse: amount refunded, extra.channelState.")}),
			"400": errorReply("The payment is not a batch-settlement refund (nothing was charged)."),
			"402": reply("The terms, a refused refund (nothing left: refund_no_balance), or the corrective 402.",
				ref("schemas", "PaymentRequiredV1"), map[string]any{x402.HeaderPaymentRequired: x402Header("x402 v2 PaymentRequired.")}),
			"404": errorReply("Payments are off."),
			"503": errorReply("The ledger, the chain or the facilitator is unavailable; nothing was refunded."),
		},
	}
}

// mcpOperation is /mcp: MCP over Streamable HTTP (JSON-RPC 2.0).
func mcpOperation() map[string]any {
	return map[string]any{
		"summary": "MCP over Streamable HTTP: a run tool per language run here (run_python, run_javascript, " +
			"run_typescript, run_bash) {code, stdin?, environment?, files?, session_id?} and, with sessions on, " +
			"open_session {language?, environment?} and close_session {session_id}.",
		"description": "JSON-RPC 2.0 messages of the Model Context Protocol (initialize, tools/list, tools/call). " +
			"Stateless; answers are JSON. With payments on, a tools/call without payment is a tool error with the " +
			"x402 PaymentRequired in structuredContent; the retry carries the PaymentPayload in params._meta[\"x402/payment\"] " +
			"and the result the SettleResponse in _meta[\"x402/payment-response\"]. A delivered run's structuredContent is the " +
			"RunResult (a call with session_id: the SessionResult; open_session's: the Session); each image file out (PNG, JPEG, GIF, WebP) is also an image content block after the text.",
		"requestBody": map[string]any{"required": true, "content": jsonContent(typed("object", "A JSON-RPC 2.0 request or notification."))},
		"responses": map[string]any{
			"200": reply("The JSON-RPC response.", typed("object", "A JSON-RPC 2.0 response."), nil),
			"202": map[string]any{"description": "A notification was accepted."},
			"400": map[string]any{"description": "Not a valid MCP message."},
			"413": map[string]any{"description": "The message is over the limit."},
			"429": map[string]any{"description": "Too many large bodies are being read at once; retry after Retry-After seconds."},
		},
	}
}

// paymentRequiredV1Schema is the body of a 402: the x402 v1 terms.
func paymentRequiredV1Schema() map[string]any {
	return map[string]any{
		"type":        "object",
		"description": "x402 v1 terms (legacy clients); v2 terms are in the PAYMENT-REQUIRED header.",
		"required":    []string{"x402Version", "error", "accepts"},
		"properties": map[string]any{
			"x402Version": typed("integer", "1"),
			"error":       typed("string", "Why payment is required, or why the payment was refused."),
			"accepts":     map[string]any{"type": "array", "items": typed("object", "v1 payment requirements.")},
		},
	}
}
