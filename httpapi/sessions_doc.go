package httpapi

import (
	"fmt"
	"maps"
	"slices"

	"sandboxd"
	"sandboxd/x402"
)

// The sessions' schemas, OpenAPI operations and discovery extensions,
// built from the one-shot run's where they share fields.

// sessionSchema is the answer of POST /v1/sessions.
func (s *Server) sessionSchema() map[string]any {
	return object("A session: one interpreter that keeps its globals, imports and /tmp between calls.", map[string]any{
		"session_id":     typed("string", "The session's id: a capability (128 random bits); keep it secret."),
		"environment":    typed("string", "The environment the session runs in."),
		"language":       typed("string", "The language the session runs (its canonical name); its calls run in it."),
		"created_at":     typed("string", "When it was opened, RFC 3339 UTC."),
		"expires_at":     typed("string", "When it ends unless a call comes first, RFC 3339 UTC."),
		"idle_timeout_s": typed("integer", "Seconds a session lives after its last call ended."),
		"max_lifetime_s": typed("integer", "Seconds a session lives at most."),
	}, "session_id", "environment", "language", "created_at", "expires_at", "idle_timeout_s", "max_lifetime_s")
}

// sessionStateSchema is the answer of GET /v1/sessions/{id}.
func sessionStateSchema() map[string]any {
	return object("A session's state.", map[string]any{
		"session_id":   typed("string", "The session's id."),
		"environment":  typed("string", "The environment the session runs in."),
		"language":     typed("string", "The language the session runs (its canonical name)."),
		"created_at":   typed("string", "When it was opened, RFC 3339 UTC."),
		"last_call_at": typed([]string{"string", "null"}, "When its last call ended, RFC 3339 UTC; null before the first."),
		"calls":        typed("integer", "Calls run so far."),
		"expires_at":   typed("string", "When it ends unless a call comes first, RFC 3339 UTC."),
		"busy":         typed("boolean", "A call is running."),
	}, "session_id", "environment", "language", "created_at", "last_call_at", "calls", "expires_at", "busy")
}

// sessionOpenSchema is the body of POST /v1/sessions.
func (s *Server) sessionOpenSchema() map[string]any {
	return object("A session to open (the body may be empty): its language and environment, combined as for "+
		"POST /v1/code.", map[string]any{"language": s.languageProp(), "environment": s.environmentProp()})
}

// sessionCodeRequestSchema is the body of POST /v1/sessions/{id}/code:
// that of POST /v1/code without the environment.
func (s *Server) sessionCodeRequestSchema() map[string]any {
	sc := s.codeRequestSchema()
	props := maps.Clone(sc["properties"].(map[string]any))
	delete(props, "environment")
	sc["properties"] = props
	lang := s.languageProp()
	lang["description"] = "The session's language, or left out; another language is 400 (a session never changes it)."
	delete(lang, "default")
	props["language"] = lang
	sc["description"] = "A program to run in the session, which keeps the language and environment it was opened in."
	return sc
}

// sessionResultSchema is the answer of a call in a session: a run's
// fields, its result and the session.
func (s *Server) sessionResultSchema() map[string]any {
	sc := s.runResultSchema()
	props := maps.Clone(sc["properties"].(map[string]any))
	props["result"] = typed([]string{"string", "null"}, "The repr of the value of the program's last expression statement, "+
		"as a REPL shows it, cut at the output cap; null when there was none or it was None.")
	props["session"] = object("The session after the call.", map[string]any{
		"session_id": typed("string", "The session's id."),
		"calls":      typed("integer", "Calls run so far, this one included."),
		"expires_at": typed("string", "When it ends unless a call comes first, RFC 3339 UTC."),
	}, "session_id", "calls", "expires_at")
	props["session_ended"] = typed("boolean", "Present and true when the call ended the session (the interpreter died, "+
		"or did not come back from the timeout's interrupt); the id then answers 404.")
	props["session_end_reason"] = typed("string", "Why the session ended, when it did.")
	sc["properties"] = props
	sc["required"] = append(slices.Clone(runResultFields), "result", "session")
	sc["description"] = "The outcome of a call in a session: a program that fails, loops or ends its session is still an answer."
	return sc
}

// sessionSchemas are the sessions' components.
func (s *Server) sessionSchemas() map[string]any {
	return map[string]any{
		"Session": s.sessionSchema(), "SessionState": sessionStateSchema(), "SessionOpenRequest": s.sessionOpenSchema(),
		"SessionCodeRequest": s.sessionCodeRequestSchema(), "SessionResult": s.sessionResultSchema(),
	}
}

// sessionIDParam is the path parameter of a session's routes.
func sessionIDParam() map[string]any {
	return map[string]any{"name": "id", "in": "path", "required": true, "description": "The session's id.",
		"schema": map[string]any{"type": "string"}}
}

// paidParams are the x402 payment headers, with the id parameter first
// when withID.
func paidParams(withID bool) []any {
	params := []any{
		map[string]any{"name": x402.HeaderPaymentSignature, "in": "header", "required": false,
			"description": "x402 v2 PaymentPayload, standard base64 of its JSON.", "schema": map[string]any{"type": "string"}},
		map[string]any{"name": x402.HeaderXPayment, "in": "header", "required": false,
			"description": "x402 v1 payment, standard base64 of its JSON.", "schema": map[string]any{"type": "string"}},
	}
	if withID {
		params = append([]any{sessionIDParam()}, params...)
	}
	return params
}

// paidReplies are the answers every paid session route shares.
func paidReplies(replies map[string]any) map[string]any {
	replies["402"] = reply("Payment required, refused, or not settled (the answer is then withheld). The v1 terms are the body.",
		ref("schemas", "PaymentRequiredV1"), map[string]any{x402.HeaderPaymentRequired: x402Header("x402 v2 PaymentRequired (the terms).")})
	replies["429"] = reply("Full, or too many large bodies are being read at once; nothing was charged.", ref("schemas", "Error"),
		map[string]any{"Retry-After": map[string]any{"description": "Seconds to wait before retrying.", "schema": map[string]any{"type": "integer"}}})
	replies["500"] = errorReply("The service failed (logged); nothing was charged.")
	replies["503"] = errorReply("Docker, the ledger or the chain is unavailable; nothing was charged.")
	return replies
}

// settledReply is a paid success, with the settlement headers.
func settledReply(description, schema string) map[string]any {
	return reply(description, ref("schemas", schema), map[string]any{
		x402.HeaderPaymentResponse:  x402Header("x402 v2 SettleResponse of a paid call."),
		x402.HeaderXPaymentResponse: x402Header("x402 v1 settlement report, when paid with X-PAYMENT."),
	})
}

// sessionPaths are the sessions' operations (with sessions off, each
// answers 404 saying so).
func (s *Server) sessionPaths() map[string]any {
	notFound := errorReply("No such session: unknown, ended or expired (the message says which); nothing was charged.")
	open := map[string]any{
		"summary": "Open a session: one interpreter that keeps its state across calls, for one tenant.",
		"description": fmt.Sprintf("Paid once at the open price when payments are on (the terms' resource is this URL); each call is then paid "+
			"at the environment's price. At most %d sessions at once; full is 429 before any payment. A session ends %s after "+
			"its last call, %s after its start at the latest, or on DELETE.",
			s.SessionSettings.Max, s.SessionSettings.IdleTimeout, s.SessionSettings.MaxLifetime),
		"parameters":  paidParams(false),
		"requestBody": map[string]any{"required": false, "content": jsonContent(ref("schemas", "SessionOpenRequest"))},
		"responses": withRetries(paidReplies(map[string]any{
			"201": settledReply("The session is open.", "Session"),
			"400": errorReply("The body is not a JSON object, or names an environment not configured."),
			"413": errorReply("The body is over its limit."),
		}), "201", ""),
	}
	call := map[string]any{
		"summary": "Run a program in the session: its globals, imports and /tmp are those the last calls left.",
		"description": "The body of POST /v1/code without environment. Paid at the session's environment's price; " +
			"a call paid by another wallet than the one that opened the session is 403 and not charged. One call at a time: " +
			"a call while another runs waits, then 409.",
		"parameters":  paidParams(true),
		"requestBody": map[string]any{"required": true, "content": jsonContent(ref("schemas", "SessionCodeRequest"))},
		"responses": withRetries(paidReplies(map[string]any{
			"200": settledReply("The call was delivered (whatever the program did).", "SessionResult"),
			"400": errorReply("The body is not a JSON object, a field is wrong or unknown, or it names an environment."),
			"403": errorReply("The payment is another wallet's than the session owner's; nothing was charged."),
			"404": notFound,
			"413": errorReply("The body, code, stdin or files are over their limits."),
		}), "200", "Another call is running in the session; or "),
	}
	state := map[string]any{
		"summary":    "A session's state.",
		"parameters": []any{sessionIDParam()},
		"responses":  map[string]any{"200": reply("The state.", ref("schemas", "SessionState"), nil), "404": notFound},
	}
	end := map[string]any{
		"summary":    "End a session; its container is removed.",
		"parameters": []any{sessionIDParam()},
		"responses":  map[string]any{"204": map[string]any{"description": "Ended."}, "404": notFound},
	}
	return map[string]any{
		sessionsPath:                map[string]any{"post": open},
		sessionsPath + "/{id}":      map[string]any{"get": state, "head": state, "delete": end},
		sessionsPath + "/{id}/code": map[string]any{"post": call},
	}
}

// sessionOpenExtensions are the extensions declared for POST /v1/sessions.
func (s *Server) sessionOpenExtensions() map[string]any {
	return s.withPaymentID(map[string]any{bazaarKey: s.httpBazaar(map[string]any{"language": "python"},
		s.sessionOpenSchema(), exampleSession(), s.sessionSchema())})
}

// sessionCallExtensions are the extensions declared for a session's calls.
func (s *Server) sessionCallExtensions() map[string]any {
	example := exampleOutput(sandboxd.LanguagePython, sandboxd.DefaultEnvironment)
	example["stdout"], example["result"] = "", "42"
	example["session"] = map[string]any{"session_id": "ses_" + "8f0c1d2e3a4b5c6d7e8f901a2b3c4d5e", "calls": 2,
		"expires_at": "2026-12-01T12:07:00Z"}
	return s.withPaymentID(map[string]any{bazaarKey: s.httpBazaar(map[string]any{"code": "x = 41\nx + 1"},
		s.sessionCodeRequestSchema(), example, s.sessionResultSchema())})
}
