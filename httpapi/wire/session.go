package wire

import (
	"encoding/json"
	"time"

	"sandboxd"
)

// SessionResponse is the answer of POST /v1/sessions (201).
type SessionResponse struct {
	SessionID   string `json:"session_id"`
	Environment string `json:"environment"`
	// Language is the canonical name of the language the session runs.
	Language     string `json:"language"`
	CreatedAt    string `json:"created_at"`
	ExpiresAt    string `json:"expires_at"`
	IdleTimeoutS int64  `json:"idle_timeout_s"`
	MaxLifetimeS int64  `json:"max_lifetime_s"`
}

// SessionState is the answer of GET /v1/sessions/{id}.
type SessionState struct {
	SessionID   string `json:"session_id"`
	Environment string `json:"environment"`
	Language    string `json:"language"`
	CreatedAt   string `json:"created_at"`
	// LastCallAt is when the last call ended; null before the first.
	LastCallAt *string `json:"last_call_at"`
	Calls      int     `json:"calls"`
	ExpiresAt  string  `json:"expires_at"`
	Busy       bool    `json:"busy"`
}

// SessionCodeResponse is the answer of a call in a session: the fields of
// a run (CodeResponse), its result and the session's state after it.
type SessionCodeResponse struct {
	CodeResponse
	// Result is the repr of the value of the program's last expression
	// statement, as a REPL shows it; null when there was none.
	Result  *string    `json:"result"`
	Session SessionRef `json:"session"`
	// SessionEnded and SessionEndReason are set when the call ended the
	// session.
	SessionEnded     bool   `json:"session_ended,omitempty"`
	SessionEndReason string `json:"session_end_reason,omitempty"`
}

// SessionRef is a session's state in a call's answer.
type SessionRef struct {
	SessionID string `json:"session_id"`
	Calls     int    `json:"calls"`
	ExpiresAt string `json:"expires_at"`
}

// Stamp is a time as the API writes it: RFC 3339, UTC, whole seconds.
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// NewSessionCodeResponse is the answer of a delivered call of job.
func NewSessionCodeResponse(job sandboxd.Job, res sandboxd.SessionResult) SessionCodeResponse {
	return SessionCodeResponse{
		CodeResponse: NewCodeResponse(job, res.Result),
		Result:       res.Value,
		Session:      SessionRef{SessionID: res.Session.ID, Calls: res.Session.Calls, ExpiresAt: Stamp(res.Session.Expires)},
		SessionEnded: res.Ended, SessionEndReason: res.EndReason,
	}
}

// NewSessionResponse is the answer of an opened session.
func NewSessionResponse(i sandboxd.SessionInfo) SessionResponse {
	return SessionResponse{SessionID: i.ID, Environment: i.Environment, Language: i.Language, CreatedAt: Stamp(i.Created), ExpiresAt: Stamp(i.Expires),
		IdleTimeoutS: int64(i.IdleTimeout / time.Second), MaxLifetimeS: int64(i.MaxLifetime / time.Second)}
}

// PendingOpen is the opening an answer pending (err, CodePending) holds,
// when its bytes were kept: its 202 names the session, as the first did.
// It is nil for any other answer.
func PendingOpen(ans *sandboxd.StoredAnswer, err error) *SessionResponse {
	if ans == nil || ans.Kind != sandboxd.AnswerSessionOpen || sandboxd.ErrorCode(err) != sandboxd.CodePending {
		return nil
	}
	var open SessionResponse
	if json.Unmarshal(ans.Body, &open) != nil || open.SessionID == "" {
		return nil
	}
	return &open
}
