package httpapi

// The JSON Schemas of the API, in one place: the MCP tool's input and output
// schemas, the OpenAPI document and the x402 discovery extension are built
// from them. They are draft 2020-12 compatible and use nothing beyond what
// draft-07 validators (the MCP TypeScript client's) understand. Those that
// quote the configured environments and caps are the Server's.

import (
	"fmt"
	"slices"
	"strings"

	"sandboxd"
	"sandboxd/internal/runnerproto"
)

// object is a JSON Schema object with its properties, the required ones and
// no others.
func object(description string, props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if description != "" {
		s["description"] = description
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// typed is a schema of one JSON type with a description.
func typed(typ any, description string) map[string]any {
	return map[string]any{"type": typ, "description": description}
}

// codeProp is the schema of the code field of lang's run tool, or of
// POST /v1/code (lang "": the language field says which).
func codeProp(lang string) map[string]any {
	desc := "The program, in the language the language field names."
	if f, ok := languages[lang]; ok {
		desc = f.Program
	}
	s := typed("string", desc)
	s["minLength"] = 1
	return s
}

// languageProp is the schema of the language field: every spelling of
// the languages this service runs (canonical names, then aliases).
func (s *Server) languageProp() map[string]any {
	c := s.catalog()
	var facts []string
	for _, lang := range c.Languages() {
		facts = append(facts, lang+" ("+strings.Join(c.EnvironmentsOf(lang), ", ")+")")
	}
	lang := typed("string", "The language; python when absent (aliases and case accepted, answers name it canonically). "+
		"Without environment it runs in its home one, with one that must run it. Here, with the environments "+
		"that run each: "+strings.Join(facts, "; ")+".")
	lang["enum"] = c.Spellings()
	lang["default"] = sandboxd.LanguagePython
	return lang
}

// stdinProp is the schema of the stdin field.
func stdinProp() map[string]any {
	return typed("string", "Handed to the program as its standard input; without it the program reads EOF.")
}

// environmentProp is the schema of the environment field: the configured
// names, each described with its languages, limits and price.
func (s *Server) environmentProp() map[string]any {
	env := typed("string", s.describeEnvironments("", s.environments()))
	env["enum"] = s.environmentNames()
	env["default"] = sandboxd.DefaultEnvironment
	return env
}

// languageEnvironmentProp is the schema of the environment field of lang's
// run tool: the environments that run lang, the one a call without it
// runs in as the default.
func (s *Server) languageEnvironmentProp(lang string) map[string]any {
	var envs []sandboxd.Environment
	for _, e := range s.environments() {
		if slices.Contains(e.Languages, lang) {
			envs = append(envs, e)
		}
	}
	_, home, _ := s.catalog().Resolve(lang, "")
	env := typed("string", s.describeEnvironments(home, envs))
	env["enum"] = s.catalog().EnvironmentsOf(lang)
	env["default"] = home
	return env
}

// filesInProp is the schema of a request's files, with the caps.
func (s *Server) filesInProp() map[string]any {
	name := typed("string", fmt.Sprintf("The file's path relative to the program's working directory, \"/\" between parts: "+
		"no absolute path, no \".\" or \"..\" part, no backslash or control character, parts of at most %d bytes, "+
		"at most %d bytes in all; no two files may share a name, nor a file be another's directory.", runnerproto.MaxPartBytes, runnerproto.MaxNameBytes))
	name["minLength"] = 1
	content := typed("string", "The file's bytes, standard base64 with padding.")
	content["contentEncoding"] = "base64"
	files := typed("array", fmt.Sprintf("Files written into the program's working directory before it starts, readable there "+
		"by their names: at most %d files (max_files) of %d bytes in all, decoded (max_files_bytes); over either, 413.",
		s.MaxFiles, s.MaxFilesBytes))
	files["items"] = object("A file in.", map[string]any{"name": name, "content": content}, "name", "content")
	files["maxItems"] = s.MaxFiles
	return files
}

// filesOutProp is the schema of an answer's files.
func (s *Server) filesOutProp() map[string]any {
	content := typed("string", "The file's bytes, standard base64 with padding; absent when the file was over the caps.")
	content["contentEncoding"] = "base64"
	files := typed("array", fmt.Sprintf("The regular files the program created or changed under its working directory, "+
		"in name order (inputs left unchanged are not returned); the contents of at most %d files and %d bytes in all; "+
		"[] when none.", s.MaxFiles, s.MaxFilesBytes))
	files["items"] = object("A file out.", map[string]any{
		"name":       typed("string", "The file's path relative to the working directory."),
		"size":       typed("integer", "The file's size in bytes."),
		"media_type": typed("string", "The file's media type, judged from its content and name, e.g. image/png."),
		"content":    content,
	}, "name", "size", "media_type")
	return files
}

// codeRequestSchema is the body of POST /v1/code.
func (s *Server) codeRequestSchema() map[string]any {
	return object("A program to run.", map[string]any{
		"language":    s.languageProp(),
		"code":        codeProp(""),
		"stdin":       stdinProp(),
		"environment": s.environmentProp(),
		"files":       s.filesInProp(),
	}, "code")
}

// toolInputSchema is the input of lang's run tool; session_id only when
// sessions are on.
func (s *Server) toolInputSchema(lang string) map[string]any {
	props := map[string]any{
		"code":        codeProp(lang),
		"stdin":       stdinProp(),
		"environment": s.languageEnvironmentProp(lang),
		"files":       s.filesInProp(),
	}
	if s.Sessions != nil {
		props["session_id"] = sessionIDProp(lang)
	}
	return object("A "+languages[lang].Title+" program to run in a fresh sandbox, or in a session.", props, "code")
}

// runResultFields lists the fields of a delivered run, all required.
var runResultFields = []string{"lang", "stdout", "stderr", "exit_code", "status", "timed_out",
	"oom_killed", "truncated", "duration_ms", "cpu_ms", "max_rss_kb", "environment", "files", "files_truncated"}

// runResultSchema is the answer of a delivered run (wire.CodeResponse).
func (s *Server) runResultSchema() map[string]any {
	status := typed("string", "ok (exit 0), error (non-zero exit), timeout, oom (killed for memory) or output_limit (killed for output).")
	status["enum"] = []string{"ok", "error", "timeout", "oom", "output_limit"}
	return object("The outcome of a run: a program that fails, loops or eats memory is still an answer.", map[string]any{
		"lang":        typed("string", "The language that ran."),
		"stdout":      typed("string", "Standard output, UTF-8 (invalid bytes replaced), capped."),
		"stderr":      typed("string", "Standard error, UTF-8 (invalid bytes replaced), capped."),
		"exit_code":   typed("integer", "The exit status; 137 when killed."),
		"status":      status,
		"timed_out":   typed("boolean", "Killed at the wall-clock limit."),
		"oom_killed":  typed("boolean", "Killed by the kernel for memory."),
		"truncated":   typed("boolean", "Output was cut at the cap (and the run killed)."),
		"duration_ms": typed("integer", "Wall-clock time from the hand-over of the code to the program's end."),
		"cpu_ms":      typed([]string{"integer", "null"}, "User plus system CPU time, children included; null when the program did not end by itself."),
		"max_rss_kb":  typed([]string{"integer", "null"}, "Peak resident memory in KiB; null when the program did not end by itself."),
		"environment": typed("string", "The environment the program ran in."),
		"files":       s.filesOutProp(),
		"files_truncated": typed("boolean", "A file is listed without its content: the files out were over "+
			"max_files or max_files_bytes."),
	}, runResultFields...)
}

// paymentRequiredSchema is the x402 v2 PaymentRequired object, loosely:
// enough to tell it apart and to read the terms; x402 owns the rest.
func paymentRequiredSchema() map[string]any {
	accept := map[string]any{
		"type":     "object",
		"required": []string{"scheme", "network", "amount", "asset", "payTo", "maxTimeoutSeconds"},
		"properties": map[string]any{
			"scheme":            typed("string", "exact"),
			"network":           typed("string", "CAIP-2 chain id, e.g. eip155:84532"),
			"amount":            typed("string", "Price in the asset's smallest unit, decimal."),
			"asset":             typed("string", "The token's contract address."),
			"payTo":             typed("string", "The address paid."),
			"maxTimeoutSeconds": typed("integer", "How long a signed payment stays acceptable."),
			"extra":             typed("object", "The token's EIP-712 domain name and version."),
		},
	}
	return map[string]any{
		"type":        "object",
		"description": "x402 v2 PaymentRequired: the terms of payment, and why the last one was refused.",
		"required":    []string{"x402Version", "accepts"},
		"properties": map[string]any{
			"x402Version": typed("integer", "2"),
			"error":       typed("string", "Why payment is required, or why the payment was refused."),
			"resource":    typed("object", "The resource paid for: url, description, mimeType."),
			"accepts":     map[string]any{"type": "array", "items": accept, "minItems": 1},
			"extensions":  typed("object", "x402 extensions: bazaar (discovery) and, when retries are on, payment-identifier (a retry of a lost answer with the same id is answered, not paid again)."),
		},
	}
}

// toolOutputSchema is the structured content of run_python: a delivered
// run, a delivered call in a session (sessions on), or (with isError) the
// x402 terms of payment. The MCP TypeScript
// client checks every structuredContent against it, errors included.
func (s *Server) toolOutputSchema() map[string]any {
	outcomes := []any{s.runResultSchema(), paymentRequiredSchema()}
	if s.Sessions != nil {
		outcomes = []any{s.runResultSchema(), s.sessionResultSchema(), paymentRequiredSchema()}
	}
	return map[string]any{"type": "object", "anyOf": outcomes}
}

// errorSchema is the body of every error answer.
func errorSchema() map[string]any {
	return object("An error, for a person to read.", map[string]any{
		"error": typed("string", "What went wrong and, where possible, what to do."),
	}, "error")
}
