package ledger_test

import (
	"testing"

	"sandboxd/internal/pgtest"
)

// TestMain stops the throwaway PostgreSQL the conformance suite starts.
func TestMain(m *testing.M) { pgtest.Main(m) }
