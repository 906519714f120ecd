package interop

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"sandboxd/httpapi/wire"
)

// curlCallAnswer is the answer of POST /v1/sessions/{id}/code, as the tests read it.
type curlCallAnswer struct {
	dataAnswer
	Result  *string `json:"result"`
	Session struct {
		SessionID string `json:"session_id"`
		Calls     int    `json:"calls"`
		ExpiresAt string `json:"expires_at"`
	} `json:"session"`
	SessionEnded bool `json:"session_ended"`
}

// The commands of the sessions' documentation, as the docs show them with
// localhost:8080 and the id of the open: each call builds on the last (a variable, an
// import and a file in /tmp).
const (
	curlCall1 = `{"code":"x = 41\nx + 1"}`
	curlCall2 = `{"code":"import json\nopen(\"/tmp/state.json\", \"w\").write(json.dumps({\"x\": x}))"}`
	curlCall3 = `{"code":"json.load(open(\"/tmp/state.json\"))[\"x\"] + 1"}`
)

// curlOpen opens a session in env ("" for the default) with the real curl, as the docs do.
func curlOpen(t *testing.T, base, env string) wire.SessionResponse {
	t.Helper()
	args := []string{base + "/v1/sessions", "-X", "POST"}
	if env != "" {
		args = []string{base + "/v1/sessions", "-H", "Content-Type: application/json", "-d", `{"environment":"` + env + `"}`}
	}
	r := runCurl(t, args...)
	var o wire.SessionResponse
	r.decode(t, &o)
	if r.Status != http.StatusCreated || !pageSessionID.MatchString(o.SessionID) || len(o.SessionID) != 36 {
		t.Fatalf("open: status %d, %s", r.Status, r.Body)
	}
	return o
}

// curlSessionCall posts body to session id's code with curl, as the docs do.
func curlSessionCall(t *testing.T, base, id, body string) curlCallAnswer {
	t.Helper()
	r := runCurl(t, base+"/v1/sessions/"+id+"/code", "-H", "Content-Type: application/json", "-d", body)
	var c curlCallAnswer
	r.decode(t, &c)
	if r.Status != http.StatusOK || c.Session.SessionID != id || c.SessionEnded {
		t.Fatalf("call %s: status %d, %s", body, r.Status, r.Body)
	}
	return c
}

// TestCurlSession drives a session with the real curl against a free service with both
// environments, as the docs show it: open, three calls that build on each other, GET,
// DELETE, then 404 for each route; in data, a chart drawn from a frame an earlier call
// loaded comes back as a PNG.
func TestCurlSession(t *testing.T) {
	mustInterop(t)
	svc := startService(t, instance("curl-session"), true)
	waitWarm(t, svc)
	t.Run("python", func(t *testing.T) { testCurlSessionPython(t, svc.URL) })
	t.Run("data", func(t *testing.T) { testCurlSessionData(t, svc.URL) })
}

func testCurlSessionPython(t *testing.T, base string) {
	o := curlOpen(t, base, "")
	if o.Environment != "python" || o.IdleTimeoutS <= 0 || o.MaxLifetimeS < o.IdleTimeoutS || o.ExpiresAt < o.CreatedAt {
		t.Errorf("open: %+v", o)
	}
	c := curlSessionCall(t, base, o.SessionID, curlCall1)
	if c.Result == nil || *c.Result != "42" || c.Stdout != "" || c.Session.Calls != 1 {
		t.Errorf("call 1: %+v", c)
	}
	c = curlSessionCall(t, base, o.SessionID, curlCall2)
	if c.Result == nil || *c.Result != "9" || c.Session.Calls != 2 || len(c.Files) != 1 || c.Files[0].Name != "state.json" {
		t.Errorf("call 2: result %v, files %+v, calls %d; want 9 and /tmp/state.json out", c.Result, c.Files, c.Session.Calls)
	}
	c = curlSessionCall(t, base, o.SessionID, curlCall3)
	if c.Result == nil || *c.Result != "42" || c.Status != "ok" || c.Session.Calls != 3 || len(c.Files) != 0 {
		t.Errorf("call 3: %+v, want 42 from the import, the file and the variable, and no files out", c)
	}
	r := runCurl(t, base+"/v1/sessions/"+o.SessionID)
	var st wire.SessionState
	r.decode(t, &st)
	if r.Status != http.StatusOK || st.Calls != 3 || st.Busy || st.LastCallAt == nil || st.Environment != "python" {
		t.Errorf("GET: %d %s", r.Status, r.Body)
	}
	if r := runCurl(t, "-X", "DELETE", base+"/v1/sessions/"+o.SessionID); r.Status != http.StatusNoContent || len(r.Body) != 0 {
		t.Errorf("DELETE: %d %q", r.Status, r.Body)
	}
	for _, args := range [][]string{
		{base + "/v1/sessions/" + o.SessionID},
		{base + "/v1/sessions/" + o.SessionID + "/code", "-H", "Content-Type: application/json", "-d", curlCall3},
		{"-X", "DELETE", base + "/v1/sessions/" + o.SessionID},
	} {
		r := runCurl(t, args...)
		var e struct {
			Error string `json:"error"`
		}
		r.decode(t, &e)
		if r.Status != http.StatusNotFound || !strings.Contains(e.Error, "this session was closed") {
			t.Errorf("curl %v after DELETE: %d %s, want 404 saying it was closed", args, r.Status, r.Body)
		}
	}
}

// curlLoad and curlPlot are the data session's calls: the frame loaded in the first is
// drawn by the second.
const (
	curlLoad = `import pandas as pd
df = pd.read_csv("sales.csv")
df.shape`
	curlPlot = `import matplotlib.pyplot as plt
df.groupby("month", sort=False)["sales"].sum().plot(kind="bar", title="Sales by month")
plt.savefig("sales.png")
plt.close()`
)

func testCurlSessionData(t *testing.T, base string) {
	o := curlOpen(t, base, "data")
	defer runCurl(t, "-X", "DELETE", base+"/v1/sessions/"+o.SessionID)
	if o.Environment != "data" {
		t.Errorf("open: %+v", o)
	}
	csv := base64.StdEncoding.EncodeToString(testdata(t, chartCSV))
	r := curlJSON(t, base+"/v1/sessions/"+o.SessionID+"/code", map[string]any{"code": curlLoad,
		"files": []fileIn{{Name: chartCSV, Content: csv}}})
	var c curlCallAnswer
	r.decode(t, &c)
	if r.Status != http.StatusOK || c.Result == nil || !strings.HasPrefix(*c.Result, "(") || c.Status != "ok" || len(c.Files) != 0 {
		t.Fatalf("load: %d %s", r.Status, r.Body)
	}
	r = curlJSON(t, base+"/v1/sessions/"+o.SessionID+"/code", map[string]any{"code": curlPlot})
	c = curlCallAnswer{}
	r.decode(t, &c)
	if c.Status != "ok" || len(c.Files) != 1 || c.Files[0].Name != "sales.png" || c.Files[0].Content == nil {
		t.Fatalf("plot: %+v", c)
	}
	decodePNG(t, "sales.png", *c.Files[0].Content)
}
