package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// docSessions carries the documentation's session ids over to a live service: a
// session id the docs show stands, once the documented open that answered it has run,
// for the id the live open answered, in later commands and in the answers shown. The
// docs' examples can then show one real id throughout and still run as written.
type docSessions map[string]string

// docSessionID is a session id as the docs show it.
var docSessionID = regexp.MustCompile(`ses_[0-9a-f]{32}`)

// replace puts the live ids in s.
func (d docSessions) replace(s string) string {
	return docSessionID.ReplaceAllStringFunc(s, func(id string) string {
		if live, ok := d[id]; ok {
			return live
		}
		return id
	})
}

// before puts the live ids in ex's command and answer; call it before running ex.
func (d docSessions) before(ex *docExample) {
	for i, a := range ex.args {
		ex.args[i] = d.replace(a)
	}
	d.rewriteAnswer(ex)
}

// after learns the id of an open (a documented answer with idle_timeout_s) from got,
// the live answer, and puts it in ex's answer; call it before matching the answer.
func (d docSessions) after(ex *docExample, got any) {
	w, _ := ex.answer.(map[string]any)
	g, _ := got.(map[string]any)
	if _, open := w["idle_timeout_s"]; !open {
		return
	}
	shown, _ := w["session_id"].(string)
	live, _ := g["session_id"].(string)
	if docSessionID.MatchString(shown) && live != "" {
		d[shown] = live
		d.rewriteAnswer(ex)
	}
}

func (d docSessions) rewriteAnswer(ex *docExample) {
	raw, err := json.Marshal(ex.answer)
	if err != nil {
		return
	}
	var a any
	if json.Unmarshal([]byte(d.replace(string(raw))), &a) == nil {
		ex.answer = a
	}
}

// sessionsDocs is the sessions' documentation handed to the docs (README and
// docs/api.md): its examples, run here as the docs' harness runs a page's.
const sessionsDocs = "testdata/sessions.md"

// TestDocsSessions runs the checked examples of the sessions' documentation against a
// real service in free mode, in order, as the docs' harness does, each documented
// session id standing for the live one: open, three calls that build on each other,
// the session's state; then a data session whose chart, drawn from a frame an earlier
// call loaded, comes back as a PNG. Their answers must match the ones shown.
func TestDocsSessions(t *testing.T) {
	mustInterop(t)
	raw, err := os.ReadFile(filepath.Join(interopDir, sessionsDocs))
	if err != nil {
		t.Fatal(err)
	}
	examples := parseDocExamples(t, sessionsDocs, string(raw))
	if len(examples) != 8 {
		t.Fatalf("%d checked examples in %s, want the open, three calls and the state, then a data open, a load and a chart",
			len(examples), sessionsDocs)
	}
	svc := startService(t, instance("docs-sessions"), true)
	ids := docSessions{}
	for _, ex := range examples {
		t.Run(fmt.Sprint(ex.line), func(t *testing.T) {
			ids.before(&ex)
			args, _, _ := docRequest(t, ex, svc.URL)
			r := runCurl(t, args...)
			var got any
			r.decode(t, &got)
			ids.after(&ex, got)
			var diffs []string
			matchJSON("", "", ex.answer, got, &diffs)
			for _, d := range diffs {
				t.Errorf("%s: the answer shown differs: %s", ex, d)
			}
		})
	}
	if len(ids) != 2 {
		t.Errorf("the examples opened %d sessions, want 2", len(ids))
	}
}
