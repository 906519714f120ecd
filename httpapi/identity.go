package httpapi

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"sandboxd"
)

// requestIdentity is what makes two paid requests the same request, so
// that a retry is answered from the first one's stored answer
// (docs/design/retries.md §3): the transport, the operation and the
// validated input, never the raw bytes (key order, whitespace, a language
// spelled "Python3" or left out, stdin absent or "" are one request: they
// run the same). Its JSON, with a fixed field order and no HTML escaping,
// is canonical; the identity is that JSON's SHA-256.
type requestIdentity struct {
	// V is the version of this encoding: a change of fields is a new V.
	V         int    `json:"v"`
	Transport string `json:"transport"`
	Op        string `json:"op"`
	// Session is the session of a call, else "": two sessions are two
	// requests. Only the hash leaves the process.
	Session string `json:"session"`
	// Language is a run's or an open's; "" for a call, whose language is
	// its session's (as its environment is).
	Language string `json:"language"`
	// Environment is a run's or an open's; "" for a call, whose
	// environment is its session's (so a call's identity is computable
	// when its session is gone).
	Environment string `json:"environment"`
	Code        string `json:"code"`
	Stdin       string `json:"stdin"`
	// Files are the files in, sorted by name (names are unique); never
	// null.
	Files []identityFile `json:"files"`
}

// identityFile is a file in, in a request's identity: its name and the
// SHA-256 of its decoded bytes (hashed where they lie: a request's files
// may be megabytes, and encoding them again would cost their size twice).
type identityFile struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// identityVersion is requestIdentity's V.
const identityVersion = 1

// requestHash is the identity of a paid request: lower-case hex SHA-256 of
// its requestIdentity. job is the validated job of a run or a call; an open
// passes a Job holding its language and environment only. A call's
// language and environment are left out (its session's), and an open's
// input is its language and environment alone.
func requestHash(t sandboxd.Transport, kind sandboxd.AnswerKind, session string, job sandboxd.Job) string {
	id := requestIdentity{V: identityVersion, Transport: string(t), Op: string(kind), Session: session,
		Language: job.Language, Environment: job.Environment, Code: job.Code, Stdin: job.Stdin,
		Files: make([]identityFile, 0, len(job.Files))}
	switch kind {
	case sandboxd.AnswerSessionCall:
		id.Language, id.Environment = "", ""
	case sandboxd.AnswerSessionOpen:
		id = requestIdentity{V: identityVersion, Transport: string(t), Op: string(kind), Language: job.Language,
			Environment: job.Environment, Files: id.Files}
	}
	if kind != sandboxd.AnswerSessionOpen {
		for _, f := range job.Files {
			sum := sha256.Sum256(f.Content)
			id.Files = append(id.Files, identityFile{Name: f.Name, SHA256: hex.EncodeToString(sum[:])})
		}
		slices.SortFunc(id.Files, func(a, b identityFile) int { return cmp.Compare(a.Name, b.Name) })
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(id) // strings and an int: it always encodes
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:])
}

// forAnswer returns pay naming what it buys: the answer's kind and the
// request's identity (requestHash), so that the gate can answer a retry
// of it from its stored answer.
func forAnswer(pay sandboxd.PaymentRequest, kind sandboxd.AnswerKind, session string, job sandboxd.Job) sandboxd.PaymentRequest {
	pay.Kind = kind
	pay.Request = requestHash(pay.Transport, kind, session, job)
	return pay
}
