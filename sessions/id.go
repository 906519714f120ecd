package sessions

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// idPrefix begins every session id; idBytes are its random bytes (128
// bits: an id cannot be guessed, only leaked).
const (
	idPrefix = "ses_"
	idBytes  = 16
	// logChars is how much of an id a log line shows: enough to follow
	// one session through the logs, far too little to use it.
	logChars = 8
)

// key is what the table holds an id under: its SHA-256, so that a dump of
// the table, or of the fleet registry keyed the same, gives no capability.
type key [sha256.Size]byte

// newID returns a fresh id: "ses_" and 32 hex characters from crypto/rand.
func newID() string {
	var b [idBytes]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand's contract)
	return idPrefix + hex.EncodeToString(b[:])
}

// keyOf is the key of id.
func keyOf(id string) key { return sha256.Sum256([]byte(id)) }

// short is id as a log line shows it.
func short(id string) string {
	if len(id) > logChars {
		return id[:logChars]
	}
	return id
}
