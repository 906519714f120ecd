package httpapi

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"sandboxd"
)

// TestReplayLogCode: the log line of an answered retry has no error code (it said
// code=internal, ErrorCode's answer for no error); a refused one names its code.
func TestReplayLogCode(t *testing.T) {
	var logs bytes.Buffer
	gate := &replayGate{fakeGate: &fakeGate{}, r: &fakeReplay{by: sandboxd.ReplayByPayment, ans: storedRun()}, how: replayFromCheck}
	srv := newTestServer(&fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusOK}}, gate.fakeGate)
	srv.Gate = gate
	srv.Log = slog.New(slog.NewTextHandler(&logs, nil))
	if rec := doPaid(t, srv.Handler(), "POST", "/v1/code", `{"code":"print(1)"}`); rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `msg="paid request retried"`) {
			line = l
		}
	}
	if !strings.Contains(line, `code="" answered=true`) {
		t.Errorf("the answered retry logged %q; want no code", line)
	}
}
