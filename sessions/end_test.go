package sessions

import "testing"

// TestEndReasonOfTheRuntimesSentences: each sentence a session container
// ends with is filed under its own reason; an interpreter that ended
// between calls is the program's doing, not output between calls.
func TestEndReasonOfTheRuntimesSentences(t *testing.T) {
	for why, want := range map[string]string{
		"output between calls":                                 ReasonOutputBetweenCalls,
		"the interpreter did not come back from the interrupt": ReasonInterrupt,
		"the interpreter ended between calls (exit status 0)":  ReasonEndedByProgram,
		"the interpreter ended (exit status 3)":                ReasonEndedByProgram,
		"the kernel's OOM killer ended the interpreter":        ReasonEndedByProgram,
	} {
		if got := endReason(why); got != want {
			t.Errorf("endReason(%q) = %q, want %q", why, got, want)
		}
	}
}
