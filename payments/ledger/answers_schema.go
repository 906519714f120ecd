package ledger

import "strings"

// answersTable is the answers table (version 5, answers.go): one row per
// paid answer kept for its payer's retries, keyed by (payer, payment key),
// its payment id unique per payer. BODY is the bytes' type of the backend.
// keep_ms is AnswerRow.Keep, so the moves that make a row ready need no
// configuration of their own.
const answersTable = `CREATE TABLE answers (
	payer TEXT NOT NULL,
	payment_key TEXT NOT NULL,
	payment_id TEXT NOT NULL DEFAULT '',
	request TEXT NOT NULL,
	kind TEXT NOT NULL CHECK (kind IN ('run', 'session_open', 'session_call')),
	transport TEXT NOT NULL CHECK (transport IN ('http', 'mcp')),
	state TEXT NOT NULL CHECK (state IN ('running', 'held', 'pending', 'ready')),
	x402_version INTEGER NOT NULL,
	replica TEXT NOT NULL,
	status INTEGER NOT NULL DEFAULT 0,
	body BODY,
	body_bytes BIGINT NOT NULL DEFAULT 0,
	answer_bytes BIGINT NOT NULL DEFAULT 0,
	dropped TEXT NOT NULL DEFAULT '' CHECK (dropped IN ('', 'too_large', 'evicted')),
	settlement TEXT NOT NULL DEFAULT '',
	keep_ms BIGINT NOT NULL,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	expires_at TEXT NOT NULL,
	PRIMARY KEY (payer, payment_key)
)`

// answersSchema is version 5 for a backend whose bytes are of type body.
// SQLite keeps answers a rowid table: large blobs do not suit WITHOUT
// ROWID. Both backends have partial indexes.
func answersSchema(body string) []string {
	return []string{
		strings.Replace(answersTable, "BODY", body, 1),
		`CREATE UNIQUE INDEX answers_id ON answers (payer, payment_id) WHERE payment_id <> ''`,
		`CREATE INDEX answers_expires ON answers (expires_at)`,
		`CREATE INDEX answers_held ON answers (payer, created_at) WHERE body_bytes > 0`,
	}
}
