package interop

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// TestBrowserFree drives the try-it page of a free sandboxd in chromium: a run, stdin,
// Ctrl+Enter, a timeout, a program over the size limit, and output made of markup that
// must stay text.
func TestBrowserFree(t *testing.T) {
	mustInterop(t)
	svc := startService(t, instance("browser-free"), true,
		"SANDBOX_RUNTIME_TIMEOUT=2s", "SANDBOX_RUNTIME_MAX_CODE_BYTES=4096",
		"SANDBOX_RUNTIME_MAX_CONCURRENCY=1", "SANDBOX_RUNTIME_QUEUE_WAIT=20s")
	p := openPage(t, svc.URL, "")

	t.Run("accessible", func(t *testing.T) { testAccessibleNames(t, p) })
	t.Run("run", func(t *testing.T) {
		p.typeCode(t, "print(6*7)\n", "")
		a := p.run(t, "run")
		if a.Stdout != "42\n" || a.Status != "ok" || a.Exit != "0" || a.Price != "free on this server" {
			t.Errorf("answer %+v, want stdout 42, status ok, exit 0, price free", a)
		}
		if !strings.HasSuffix(a.Duration, " ms") || !strings.HasSuffix(a.CPU, " ms") || !strings.HasSuffix(a.RSS, " KiB") {
			t.Errorf("duration %q, cpu %q, rss %q: want figures", a.Duration, a.CPU, a.RSS)
		}
		p.phoneShot(t, "run")
	})
	codeField := p.labelled(t, "Code")
	t.Run("stdin-ctrl-enter", func(t *testing.T) {
		p.typeCode(t, "import sys\nprint(sys.stdin.read()[::-1])", "olleh")
		p.do(t, "Ctrl+Enter in the editor", chromedp.Focus(codeField),
			chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
		if a := p.waitAnswer(t, "stdin"); a.Stdout != "hello\n" || a.Status != "ok" {
			t.Errorf("answer %+v, want stdout hello", a)
		}
	})
	t.Run("tab-indents", func(t *testing.T) {
		p.clear(t, codeField)
		p.do(t, "Tab in the editor", chromedp.Focus(codeField),
			chromedp.KeyEvent("\t"), chromedp.SendKeys(codeField, "x"))
		if v := eval[string](t, p, `document.getElementById("`+string(codeField)+`").value`); v != "    x" {
			t.Errorf("after Tab and x the code is %q, want four spaces and x", v)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		p.typeCode(t, "print('started', flush=True)\nwhile True: pass", "")
		a := p.run(t, "timeout")
		if a.Status != "timeout" || !strings.Contains(a.Message, "time limit") || a.Stdout != "started\n" {
			t.Errorf("answer %+v, want status timeout with its words and the output so far", a)
		}
		p.phoneShot(t, "timeout")
	})
	t.Run("too-large", func(t *testing.T) {
		p.do(t, "a long program", chromedp.SetValue(codeField, "# "+strings.Repeat("x", 5000)))
		a := p.run(t, "too-large")
		if a.Status != "too large" || !strings.Contains(a.Message, "over the limit of 4096 bytes") {
			t.Errorf("answer %+v, want 413 in words", a)
		}
	})
	t.Run("busy", func(t *testing.T) {
		// A service of its own that answers busy at once: the page's service
		// queues, since a run's sandbox slot is held until its container has stopped.
		busy := startService(t, instance("browser-busy"), true, "SANDBOX_RUNTIME_TIMEOUT=10s",
			"SANDBOX_RUNTIME_MAX_CONCURRENCY=1", "SANDBOX_RUNTIME_QUEUE_WAIT=0s")
		testBusy(t, openPage(t, busy.URL, ""), busy.URL)
	})
	t.Run("hostile-output", func(t *testing.T) { testHostileOutput(t, p) })
}

// testBusy holds the one sandbox of the service at base (no queue) with a program that
// loops until the timeout, then presses Run: the 429 is shown in words with its
// Retry-After.
func testBusy(t *testing.T, p *page, base string) {
	held := make(chan struct{})
	go func() {
		defer close(held)
		// Until it gets the sandbox: a probe below may hold it for a moment.
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
			res, err := httpClient.Post(base+"/v1/code", "application/json", strings.NewReader(`{"code":"while True: pass"}`))
			if err != nil {
				return
			}
			res.Body.Close()
			if res.StatusCode != 429 {
				return
			}
		}
	}()
	defer func() { <-held }()
	// The loop holds the one sandbox (for the service's 10 s) once a probe is refused.
	taken := false
	waitFor(10*time.Second, func() bool {
		res, err := httpClient.Post(base+"/v1/code", "application/json", strings.NewReader(`{"code":"pass"}`))
		if err != nil {
			return false
		}
		res.Body.Close()
		taken = res.StatusCode == 429
		return taken
	})
	if !taken {
		t.Fatal("the looping program never held the sandbox")
	}
	p.typeCode(t, "print(1)", "")
	a := p.run(t, "busy")
	if a.Status != "busy" || !strings.Contains(a.Message, "Every sandbox is busy. Try again in ") {
		t.Errorf("answer %+v, want 429 in words with its Retry-After", a)
	}
}

// testAccessibleNames checks what a screen reader (and the tests) find: one button named
// exactly "Run", the regions named stdout and stderr, the snippets filled with this server.
func testAccessibleNames(t *testing.T, p *page) {
	// The document's object, not DOM.getDocument: that would reset the node ids chromedp keeps.
	doc, err := chromedp.Call(p.ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: "document"})
	if err != nil || doc.Result == nil {
		t.Fatalf("the document object: %v", err)
	}
	for _, want := range []struct{ role, name string }{{"button", "Run"}, {"textbox", "Code"}, {"textbox", "Stdin"}} {
		res, err := chromedp.Call(p.ctx, accessibility.QueryAXTree,
			accessibility.QueryAXTreeParams{ObjectID: doc.Result.ObjectID, AccessibleName: want.name, Role: want.role})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Nodes) != 1 {
			t.Errorf("%d %s nodes named %q, want 1", len(res.Nodes), want.role, want.name)
		}
	}
	n := eval[int](t, p, `document.querySelectorAll('[aria-label="stdout"], [aria-label="stderr"]').length`)
	if n != 2 {
		t.Errorf("%d regions labelled stdout or stderr, want 2", n)
	}
	snippets := eval[string](t, p, `document.getElementById("from-code").textContent`)
	for _, want := range []string{"curl -s " + p.url + "/v1/code", "--url " + p.url + "/v1/code", `"url": "` + p.url + `/mcp"`} {
		if !strings.Contains(snippets, want) {
			t.Errorf("the call-it-from-code block lacks %q:\n%s", want, snippets)
		}
	}
	if eval[string](t, p, `document.querySelector('a[href="/v1/openapi.json"]').textContent`) == "" {
		t.Error("no link to /v1/openapi.json")
	}
}

// hostileProgram prints markup to stdout and stderr: run as HTML it would set
// window.__pwned, fetch /pwned-by-img and add elements to the output regions.
const hostileProgram = `import sys
print('<script>window.__pwned = 1</script><img src="/pwned-by-img" onerror="window.__pwned = 2">')
print('<b>bold</b><iframe src="javascript:parent.__pwned=3"></iframe>', file=sys.stderr)
`

// testHostileOutput checks that a program's markup is shown as the text it printed and
// never becomes elements or runs.
func testHostileOutput(t *testing.T, p *page) {
	p.typeCode(t, hostileProgram, "")
	a := p.run(t, "hostile-output")
	wantOut := `<script>window.__pwned = 1</script><img src="/pwned-by-img" onerror="window.__pwned = 2">` + "\n"
	if a.Stdout != wantOut || !strings.HasPrefix(a.Stderr, "<b>bold</b><iframe") {
		t.Errorf("stdout %q, stderr %q: want the markup as text", a.Stdout, a.Stderr)
	}
	if n := eval[int](t, p, `document.querySelectorAll('[aria-label="stdout"] *, [aria-label="stderr"] *').length`); n != 0 {
		t.Errorf("the output regions hold %d elements, want none", n)
	}
	if v := eval[string](t, p, `String(window.__pwned)`); v != "undefined" {
		t.Errorf("window.__pwned = %s: the output ran", v)
	}
	if n := eval[int](t, p, `document.querySelectorAll("script:not([src]), img, iframe").length`); n != 0 {
		t.Errorf("%d inline scripts, images or frames in the page, want none", n)
	}
}
