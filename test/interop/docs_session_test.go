package interop

import (
	"encoding/json"
	"regexp"
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
