package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"sandboxd"
	"sandboxd/httpapi/mcptools"
	"sandboxd/httpapi/wire"
)

// nodeCatalog is a catalog with the node environment: javascript and
// bash in node (no typescript), python and bash in python, python in data.
func nodeCatalog() []sandboxd.Environment {
	return []sandboxd.Environment{
		{Name: "python", Description: "Standard library only.", Price: "0.005",
			Languages: []string{sandboxd.LanguagePython, sandboxd.LanguageBash}},
		{Name: "data", Description: "numpy.", Price: "0.01", Languages: []string{sandboxd.LanguagePython}},
		{Name: "node", Description: "Node.js 24.", Price: "0.02",
			Languages: []string{sandboxd.LanguageJavaScript, sandboxd.LanguageBash}},
	}
}

// newNodeSessionServer is a session server on engine and gate whose
// catalog is nodeCatalog, with sessions in python and node.
func newNodeSessionServer(t *testing.T, engine *fakeSessionEngine, gate *fakeGate) *Server {
	t.Helper()
	cfg := sessionsConfig()
	cfg.Environments = map[string]int64{"python": 1 << 27, "node": 1 << 27}
	srv := newSessionServer(t, engine, gate, cfg)
	srv.Environments = nodeCatalog()
	return srv
}

// TestCodeLanguagePythonAlone: with python alone configured (node turned
// off, as an operator may), every spelling of Python runs, javascript is
// not offered, and hostile
// values of language and environment are 400s with a message that says
// what to send, never the value whole.
func TestCodeLanguagePythonAlone(t *testing.T) {
	huge := strings.Repeat("ü", 200<<10)
	for _, tc := range []struct{ name, body, want string }{
		{"absent", `{"code":"x"}`, ""},
		{"null", `{"language":null,"environment":null,"code":"x"}`, ""},
		{"blank", `{"language":" \t","environment":"","code":"x"}`, ""},
		{"cased and spaced", `{"language":"  PyThOn3 ","environment":" PYTHON ","code":"x"}`, ""},
		{"javascript", `{"language":"javascript","code":"x"}`, "javascript is not offered here"},
		{"js alias", `{"language":"Node","code":"x"}`, "javascript is not offered here"},
		{"bash", `{"language":"sh","code":"x"}`, "bash is not offered here"},
		{"javascript in python", `{"language":"js","environment":"python","code":"x"}`,
			`environment "python" runs python; javascript is not offered here`},
		{"unknown", `{"language":"Ruby","code":"x"}`,
			`language "ruby" is not supported; this service runs python (also python3)`},
		{"unicode", `{"language":"pythön","code":"x"}`,
			`language "pythön" is not supported; this service runs python (also python3)`},
		{"escaped NUL", `{"language":"python\u0000","code":"x"}`,
			`language "python\x00" is not supported; this service runs python (also python3)`},
		{"huge", `{"language":"` + huge + `","code":"x"}`,
			`language "` + strings.Repeat("ü", 32) + `"… (409600 bytes) is not supported; this service runs python`},
		{"huge environment", `{"environment":"` + huge + `","code":"x"}`,
			`environment "` + strings.Repeat("ü", 32) + `"… (409600 bytes) is not configured; use one of: python`},
		{"number", `{"language":3,"code":"x"}`, `"language"`},
		{"bool", `{"language":true,"code":"x"}`, `"language"`},
		{"array", `{"language":["python"],"code":"x"}`, `"language"`},
		{"object", `{"language":{"name":"python"},"code":"x"}`, `"language"`},
		{"environment number", `{"environment":1,"code":"x"}`, `"environment"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runner := &fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusOK}}
			srv := newTestServer(runner, &fakeGate{})
			srv.MaxBodyBytes = 1 << 20
			rec := do(t, srv.Handler(), "POST", "/v1/code", tc.body)
			if tc.want == "" {
				var out wire.CodeResponse
				if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil || out.Lang != "python" ||
					out.Environment != "python" || runner.jobs[0].Language != sandboxd.LanguagePython {
					t.Fatalf("%d %s", rec.Code, rec.Body)
				}
				return
			}
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("%d %s, want 400", rec.Code, rec.Body)
			}
			if msg := errorOf(t, rec.Body.Bytes()); !strings.Contains(msg, tc.want) || len(msg) > 400 {
				t.Fatalf("error %q, want it to hold %q (and be short)", msg, tc.want)
			}
			if runner.ran() != 0 {
				t.Fatal("a refused request ran")
			}
		})
	}
}

// TestCodeLanguageResolved: with a node environment, a language without an
// environment runs in its home, the runner gets the canonical language,
// the payment is priced at the environment that runs it, and §2.1's
// messages name what runs where.
func TestCodeLanguageResolved(t *testing.T) {
	for _, tc := range []struct{ name, body, lang, env, fail string }{
		{"alias to its home", `{"language":"JS","code":"x"}`, "javascript", "node", ""},
		{"bash to its home", `{"language":"bash","code":"x"}`, "bash", "python", ""},
		{"bash where named", `{"language":"sh","environment":"node","code":"x"}`, "bash", "node", ""},
		{"environment's first", `{"environment":"node","code":"x"}`, "javascript", "node", ""},
		{"default", `{"code":"x"}`, "python", "python", ""},
		{"not listed", `{"language":"javascript","environment":"data","code":"x"}`, "", "",
			`environment "data" runs python; javascript runs in node`},
		{"runs nowhere", `{"language":"ts","code":"x"}`, "", "", "typescript is not offered here"},
		{"unknown", `{"language":"ruby","code":"x"}`, "", "",
			`language "ruby" is not supported; this service runs python, javascript, bash (also python3, js, node, sh)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runner := &fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusOK}}
			gate := &fakeGate{}
			srv := newTestServer(runner, gate)
			srv.Environments = nodeCatalog()
			rec := do(t, srv.Handler(), "POST", "/v1/code", tc.body)
			if tc.fail != "" {
				if msg := errorOf(t, rec.Body.Bytes()); rec.Code != http.StatusBadRequest || msg != tc.fail {
					t.Fatalf("%d %q, want the 400 %q", rec.Code, msg, tc.fail)
				}
				return
			}
			var out wire.CodeResponse
			if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			job := runner.jobs[0]
			if job.Language != tc.lang || job.Environment != tc.env || out.Lang != tc.lang || out.Environment != tc.env {
				t.Fatalf("ran %q in %q, answered %q in %q; want %q in %q", job.Language, job.Environment, out.Lang,
					out.Environment, tc.lang, tc.env)
			}
			if req := gate.lastRequest(); req.Environment != tc.env {
				t.Fatalf("priced at %q, want %q", req.Environment, tc.env)
			}
		})
	}
}

// TestSessionLanguage: a session opens in the language it is asked for,
// says so when opened and when read, and its calls run in it; a call
// naming another language is refused before anything runs or is paid.
func TestSessionLanguage(t *testing.T) {
	engine, gate := &fakeSessionEngine{}, &fakeGate{}
	srv := newNodeSessionServer(t, engine, gate)
	h := srv.Handler()

	rec := do(t, h, "POST", "/v1/sessions", `{"language":" SH "}`)
	var open wire.SessionResponse
	decodeRec(t, rec, &open)
	if rec.Code != http.StatusCreated || open.Language != "bash" || open.Environment != "python" ||
		engine.langs[0] != sandboxd.LanguageBash {
		t.Fatalf("open: %d %s (engine opened %q)", rec.Code, rec.Body, engine.langs)
	}
	var state wire.SessionState
	decodeRec(t, do(t, h, "GET", "/v1/sessions/"+open.SessionID, ""), &state)
	if state.Language != "bash" {
		t.Fatalf("state %+v, want language bash", state)
	}
	path := "/v1/sessions/" + open.SessionID + "/code"
	for _, body := range []string{`{"code":"echo"}`, `{"language":"bash","code":"echo"}`, `{"language":"sh","code":"echo"}`,
		`{"language":null,"code":"echo"}`} {
		if rec := do(t, h, "POST", path, body); rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
	for _, job := range engine.lastJobs {
		if job.Language != sandboxd.LanguageBash || job.Environment != "python" {
			t.Fatalf("a call ran %q in %q, want bash in python", job.Language, job.Environment)
		}
	}
	checked := len(gate.requests)
	for body, want := range map[string]string{
		`{"language":"python","code":"x"}`: "session " + open.SessionID[:8] + "… runs bash; leave \"language\" out, " +
			"or open another session for python",
		`{"language":"js","code":"x"}`:   "session " + open.SessionID[:8] + "… runs bash",
		`{"language":"ruby","code":"x"}`: `language "ruby" is not supported; this service runs python, javascript, bash`,
		`{"language":7,"code":"x"}`:      `request body is not valid JSON: field "language" must be a string`,
	} {
		rec := do(t, h, "POST", path, body)
		if msg := errorOf(t, rec.Body.Bytes()); rec.Code != http.StatusBadRequest || !strings.HasPrefix(msg, want) ||
			strings.Contains(msg, open.SessionID) {
			t.Errorf("%s: %d %q, want a 400 starting %q (and the id cut)", body, rec.Code, msg, want)
		}
	}
	if len(gate.requests) != checked || len(engine.lastJobs) != 4 {
		t.Fatalf("a refused call was checked (%d) or ran (%d)", len(gate.requests)-checked, len(engine.lastJobs)-4)
	}
	for body, want := range map[string]string{
		`{"language":"javascript","environment":"data"}`: `environment "data" runs python; javascript runs in node`,
		`{"language":"typescript"}`:                      "typescript is not offered here",
		`{"language":["js"]}`:                            `"language"`,
	} {
		rec := do(t, h, "POST", "/v1/sessions", body)
		if msg := errorOf(t, rec.Body.Bytes()); rec.Code != http.StatusBadRequest || !strings.Contains(msg, want) {
			t.Errorf("open %s: %d %q, want a 400 with %q", body, rec.Code, msg, want)
		}
	}
}

// TestMCPToolPerLanguage: a run tool for each language some environment
// runs, each with only those environments, its own resource and its own
// bazaar; with python alone configured, run_python is the only run tool.
func TestMCPToolPerLanguage(t *testing.T) {
	pythonAlone := listTools(t, mustMCP(t, newSessionServer(t, &fakeSessionEngine{}, &fakeGate{}, sessionsConfig())))
	if len(pythonAlone) != 3 || pythonAlone[toolName] == nil || pythonAlone[mcptools.OpenToolName] == nil ||
		pythonAlone[mcptools.CloseToolName] == nil {
		t.Fatalf("python alone's tools: %v", pythonAlone)
	}

	runner := &fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusOK}}
	gate := &fakeGate{}
	srv := newTestServer(runner, gate)
	srv.Environments = nodeCatalog()
	cs := mustMCP(t, srv)
	tools := listTools(t, cs)
	if len(tools) != 3 || tools["run_python"] == nil || tools["run_javascript"] == nil || tools["run_bash"] == nil {
		t.Fatalf("tools: %v, want run_python, run_javascript and run_bash (no environment runs typescript)", tools)
	}
	in := mustJSON(t, tools["run_javascript"].InputSchema)
	wantIn(t, "run_javascript's input", in, `"enum":["node"]`, `"default":"node"`, "Node.js 24")
	wantIn(t, "run_bash's input", mustJSON(t, tools["run_bash"].InputSchema), `"enum":["python","node"]`,
		`"default":"python"`)
	if strings.Contains(in, `"python"`) || strings.Contains(in, `"language"`) {
		t.Fatalf("run_javascript's input names python or a language field: %s", in)
	}

	res := callNamed(t, cs, "run_javascript", map[string]any{"code": "console.log(1)"}, nil)
	if res.IsError || runner.jobs[0].Language != sandboxd.LanguageJavaScript || runner.jobs[0].Environment != "node" {
		t.Fatalf("run_javascript: %s; ran %+v", text(t, res), runner.jobs)
	}
	req := gate.lastRequest()
	bazaar, _ := req.Extensions[bazaarKey].(map[string]any)
	if req.ResourceURL != "mcp://tool/run_javascript" || req.Environment != "node" ||
		!strings.Contains(mustJSON(t, bazaar), `"toolName":"run_javascript"`) {
		t.Fatalf("paid for %q at %q with %s", req.ResourceURL, req.Environment, mustJSON(t, bazaar))
	}
	res = callNamed(t, cs, "run_javascript", map[string]any{"code": "1", "environment": "data"}, nil)
	if !res.IsError || text(t, res) != `environment "data" runs python; javascript runs in node` {
		t.Fatalf("javascript in data: %s", text(t, res))
	}
	res = callNamed(t, cs, "run_javascript", map[string]any{"code": "1", "language": "python"}, nil)
	if !res.IsError || !strings.Contains(text(t, res), `"language"`) {
		t.Fatalf("a language argument: %s", text(t, res))
	}
}

// TestMCPSessionLanguage: open_session takes a language and names the
// tool to call; a session_id sent to another language's tool is a tool
// error naming the right one, and nothing runs or is paid for it.
func TestMCPSessionLanguage(t *testing.T) {
	engine, gate := &fakeSessionEngine{}, &fakeGate{}
	srv := newNodeSessionServer(t, engine, gate)
	cs := mustMCP(t, srv)

	res := callNamed(t, cs, mcptools.OpenToolName, map[string]any{"language": "node"}, nil)
	open := structured(t, res)
	id, _ := open["session_id"].(string)
	if res.IsError || open["language"] != "javascript" || open["environment"] != "node" ||
		!strings.Contains(text(t, res), "pass its session_id to run_javascript") {
		t.Fatalf("open_session: %v %s", open, text(t, res))
	}
	checked := len(gate.requests)
	res = callNamed(t, cs, toolName, map[string]any{"code": "1", "session_id": id}, nil)
	if want := "session " + id[:8] + "… runs javascript; call run_javascript with it"; !res.IsError || text(t, res) != want {
		t.Fatalf("run_python in a javascript session: %s, want %q", text(t, res), want)
	}
	if len(gate.requests) != checked || len(engine.lastJobs) != 0 {
		t.Fatal("a call to the wrong tool was checked or ran")
	}
	res = callNamed(t, cs, "run_javascript", map[string]any{"code": "1", "session_id": id}, nil)
	if res.IsError || engine.lastJobs[0].Language != sandboxd.LanguageJavaScript {
		t.Fatalf("run_javascript in its session: %s %+v", text(t, res), engine.lastJobs)
	}
	if req := gate.lastRequest(); req.ResourceURL != "mcp://tool/run_javascript" || req.Environment != "node" {
		t.Fatalf("the call paid for %q at %q", req.ResourceURL, req.Environment)
	}
	res = callNamed(t, cs, mcptools.OpenToolName, map[string]any{"language": 5}, nil)
	if !res.IsError || !strings.Contains(text(t, res), `"language"`) {
		t.Fatalf("open_session with a number: %s", text(t, res))
	}
}

// TestOpenAPILanguages: the language enum lists the spellings of what
// runs here, and only those.
func TestOpenAPILanguages(t *testing.T) {
	srv := newTestServer(&fakeRunner{}, &fakeGate{})
	doc := do(t, srv.Handler(), "GET", "/v1/openapi.json", "").Body.String()
	wantIn(t, "today's OpenAPI", doc, `"enum":["python","python3"]`)
	srv.Environments = nodeCatalog()
	doc = do(t, srv.Handler(), "GET", "/v1/openapi.json", "").Body.String()
	wantIn(t, "the OpenAPI with node", doc, `"enum":["python","javascript","bash","python3","js","node","sh"]`,
		"javascript (node); bash (python, node)")
}

// TestOpenAPILanguagesExtension: the document's x-languages lists each
// language some environment runs, in the order messages name them, with
// the environments that run it and the one it runs in without
// environment (its home when that runs it, else the first by name): what
// the try-it page builds its language switch from.
func TestOpenAPILanguagesExtension(t *testing.T) {
	type entry struct {
		Language     string   `json:"language"`
		Environments []string `json:"environments"`
		Default      string   `json:"default_environment"`
	}
	read := func(srv *Server) []entry {
		var doc struct {
			Languages []entry `json:"x-languages"`
		}
		if err := json.Unmarshal(do(t, srv.Handler(), "GET", "/v1/openapi.json", "").Body.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Languages
	}
	srv := newTestServer(&fakeRunner{}, &fakeGate{})
	if got, want := read(srv), []entry{{"python", []string{"python"}, "python"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("today: x-languages %+v, want %+v", got, want)
	}
	srv.Environments = nodeCatalog()
	want := []entry{{"python", []string{"python", "data"}, "python"}, {"javascript", []string{"node"}, "node"},
		{"bash", []string{"python", "node"}, "python"}}
	if got := read(srv); !reflect.DeepEqual(got, want) {
		t.Errorf("with node: x-languages %+v, want %+v", got, want)
	}
	srv.Environments[0].Languages = []string{sandboxd.LanguagePython} // bash's home no longer runs it
	want[0].Environments, want[2] = []string{"python", "data"}, entry{"bash", []string{"node"}, "node"}
	if got := read(srv); !reflect.DeepEqual(got, want) {
		t.Errorf("bash in node alone: x-languages %+v, want %+v", got, want)
	}
}
